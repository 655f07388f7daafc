// psum_probe: the PSUM writes of the co-simulation's retire trace (see rtl/sim/vmem_probe.sv): the core
// port's tile write, then an MXU row (the new row value, after accumulation; a tile not written
// since reset is zeroed under it first).
module psum_probe #(
  parameter int unsigned N = 4
) (
  input logic                 clk_i,
  input logic                 rst_ni,
  input logic                 wr_req_i,
  input logic                 wr_ok,
  input logic [31:0]          wr_addr_i,
  input logic [N*N*32-1:0]    wr_data_i,
  input logic                 mxu_we_i,
  input logic                 mxu_ok,
  input logic                 mxu_fresh,
  input logic [31:0]          mxu_addr_i,
  input logic [$clog2(N)-1:0] mxu_row_i,
  input logic [N*32-1:0]      new_row
);
  import "DPI-C" function int tt_retire_on();
  import "DPI-C" function void tt_mword(input int unsigned value);
  import "DPI-C" function void tt_mtile(input int unsigned cycle, input int kind, input int unsigned tile);
  import "DPI-C" function void tt_mrow(input int unsigned cycle, input int unsigned tile, input int row, input int fresh);

  logic        on_q;
  int unsigned cycle_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      on_q    <= 1'b0;
      cycle_q <= '0;
    end else begin
      if (cycle_q == 0) on_q <= tt_retire_on() != 0;
      cycle_q <= cycle_q + 1;
      if (on_q && wr_req_i && wr_ok) begin
        for (int l = 0; l < int'(N * N); l++) tt_mword(wr_data_i[l*32 +: 32]);
        tt_mtile(cycle_q, 1, wr_addr_i);
      end
      if (on_q && mxu_we_i && mxu_ok) begin
        for (int n = 0; n < int'(N); n++) tt_mword(new_row[n*32 +: 32]);
        tt_mrow(cycle_q, mxu_addr_i, int'(mxu_row_i), int'(mxu_fresh));
      end
    end
  end
endmodule

bind psum psum_probe #(.N(N)) u_psum_probe (
  .clk_i, .rst_ni, .wr_req_i, .wr_ok, .wr_addr_i, .wr_data_i, .mxu_we_i, .mxu_ok, .mxu_fresh,
  .mxu_addr_i, .mxu_row_i, .new_row
);
