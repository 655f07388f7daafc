// vrf_probe: the vector register writes of the co-simulation's retire trace (see
// rtl/sim/retire_probe.sv): bound into the VRF, one tt_vwrite per write port and cycle (port 0
// before port 1) with the register and a hash of the value (golden/trace.py's tile_hash).
module vrf_probe #(
  parameter int unsigned N = 4
) (
  input logic              clk_i,
  input logic              rst_ni,
  input logic              we0_i,
  input logic [3:0]        waddr0_i,
  input logic [N*N*32-1:0] wdata0_i,
  input logic              we1_i,
  input logic [3:0]        waddr1_i,
  input logic [N*N*32-1:0] wdata1_i
);
  import "DPI-C" function int tt_retire_on();
  import "DPI-C" function void tt_vwrite(input int unsigned cycle, input int vreg, input longint unsigned hash);

  function automatic logic [63:0] tile_hash(input logic [N*N*32-1:0] t);
    logic [63:0] h;
    h = 64'hcbf29ce484222325;
    for (int l = 0; l < N * N; l++) h = (h ^ 64'(t[l*32 +: 32])) * 64'h100000001b3;
    return h;
  endfunction

  logic        on_q;
  int unsigned cycle_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      on_q    <= 1'b0;
      cycle_q <= '0;
    end else begin
      if (cycle_q == 0) on_q <= tt_retire_on() != 0;
      cycle_q <= cycle_q + 1;
      if (on_q && we0_i) tt_vwrite(cycle_q, int'(waddr0_i), tile_hash(wdata0_i));
      if (on_q && we1_i) tt_vwrite(cycle_q, int'(waddr1_i), tile_hash(wdata1_i));
    end
  end
endmodule

bind vrf vrf_probe #(.N(N)) u_vrf_probe (
  .clk_i, .rst_ni, .we0_i, .waddr0_i, .wdata0_i, .we1_i, .waddr1_i, .wdata1_i
);
