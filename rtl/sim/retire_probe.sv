// retire_probe: the co-simulation's retire trace (doc/random.md, issue [3/6] item 1). Bound into
// the SXU (retire_probe: every retired instruction, slot 0 then slot 1, with the scalar register it
// writes) and into the VRF (vrf_probe: every vector register write, port 0 then port 1, with a
// hash of the value). Simulation only: the probes call the C++ side (rtl/sim/retire_trace.cpp)
// only when it asks for a trace (tt_retire_on(), read at every reset release), so a normal run
// pays two idle flops.
//
// The hash is golden/trace.py's tile_hash: word-wise FNV-1a over the N*N lanes in lane order,
// h = (h ^ lane) * 0x100000001b3 mod 2^64 from 0xcbf29ce484222325.
module retire_probe #(
  parameter int unsigned IMEM_AW = 12
) (
  input logic               clk_i,
  input logic               rst_ni,
  input logic               fire_i,     // slot 0 retires
  input logic               pair_i,     // slot 1 retires with it
  input logic [IMEM_AW-1:0] pc_i,       // slot 0's pc
  input logic               we0_i,      // slot 0 writes scalar register rd0_i
  input logic [3:0]         rd0_i,
  input logic [31:0]        res0_i,
  input logic               we1_i,
  input logic [3:0]         rd1_i,
  input logic [31:0]        res1_i
);
  import "DPI-C" function int tt_retire_on();
  import "DPI-C" function void tt_retire(input int unsigned cycle, input int unsigned pc, input int sreg, input int unsigned value);

  logic        on_q;
  int unsigned cycle_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      on_q    <= 1'b0;
      cycle_q <= '0;
    end else begin
      if (cycle_q == 0) on_q <= tt_retire_on() != 0;
      cycle_q <= cycle_q + 1;
      if (on_q && fire_i) begin
        tt_retire(cycle_q, 32'(pc_i), (we0_i && rd0_i != 4'd0) ? int'(rd0_i) : -1, res0_i);
        if (pair_i) tt_retire(cycle_q, 32'(pc_i) + 1, (we1_i && rd1_i != 4'd0) ? int'(rd1_i) : -1, res1_i);
      end
    end
  end
endmodule

bind sxu retire_probe #(.IMEM_AW(IMEM_AW)) u_retire_probe (
  .clk_i, .rst_ni, .fire_i(fire), .pair_i(pair), .pc_i(pc_q),
  .we0_i(s_we), .rd0_i(rd), .res0_i(s_res), .we1_i(s_we1), .rd1_i(rd1), .res1_i(s_res1)
);
