// vmem_probe: the memory writes of the co-simulation's retire trace (see rtl/sim/retire_probe.sv),
// bound into VMEM (this file) and PSUM (psum_probe.sv). Every write that takes effect, in the order
// the memory applies it within a cycle, as lanes (rtl/sim/retire_trace.cpp prints them):
//   VMEM: a DMA tile write (marked: one DMA may write a tile several times, the golden model's
//   sequential copy only the last), then the core port's tile write or masked element scatter;
//   PSUM: the core port's tile write, then an MXU row (the new row value, after accumulation; a
//   tile not written since reset is zeroed under it first).
// tinytpu/lockstep.py rebuilds every tile's values from these and the bundle's preloads and
// compares each tile's sequence of values with the golden model's per-instruction tile writes.
module vmem_probe #(
  parameter int unsigned N = 4,
  localparam int unsigned L = N * N
) (
  input logic                 clk_i,
  input logic                 rst_ni,
  input logic                 dma_wr,
  input logic [31:0]          dma_addr_i,
  input logic [N*N*32-1:0]    dma_wdata_i,
  input logic                 wr_req_i,
  input logic                 wr_ok,
  input logic                 wr_elem_i,
  input logic [L-1:0]         wr_mask_i,
  input logic [L-1:0][31:0]   wr_eaddr_i,
  input logic [31:0]          wr_addr_i,
  input logic [N*N*32-1:0]    wr_data_i
);
  import "DPI-C" function int tt_retire_on();
  import "DPI-C" function void tt_mword(input int unsigned value);
  import "DPI-C" function void tt_mtile(input int unsigned cycle, input int kind, input int unsigned tile);
  import "DPI-C" function void tt_mdma(input int unsigned cycle, input int unsigned tile);
  import "DPI-C" function void tt_melem(input int unsigned cycle, input int kind, input int unsigned elem, input int unsigned value);

  logic        on_q;
  int unsigned cycle_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      on_q    <= 1'b0;
      cycle_q <= '0;
    end else begin
      if (cycle_q == 0) on_q <= tt_retire_on() != 0;
      cycle_q <= cycle_q + 1;
      if (on_q && dma_wr) begin
        for (int l = 0; l < int'(L); l++) tt_mword(dma_wdata_i[l*32 +: 32]);
        tt_mdma(cycle_q, dma_addr_i);
      end
      if (on_q && wr_req_i && wr_ok && !wr_elem_i) begin
        for (int l = 0; l < int'(L); l++) tt_mword(wr_data_i[l*32 +: 32]);
        tt_mtile(cycle_q, 0, wr_addr_i);
      end
      if (on_q && wr_req_i && wr_ok && wr_elem_i) begin
        for (int l = 0; l < int'(L); l++)
          if (wr_mask_i[l]) tt_melem(cycle_q, 0, wr_eaddr_i[l], wr_data_i[l*32 +: 32]);
      end
    end
  end
endmodule

bind vmem vmem_probe #(.N(N)) u_vmem_probe (
  .clk_i, .rst_ni, .dma_wr, .dma_addr_i, .dma_wdata_i, .wr_req_i, .wr_ok, .wr_elem_i, .wr_mask_i,
  .wr_eaddr_i, .wr_addr_i, .wr_data_i
);

