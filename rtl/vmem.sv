// vmem: the unified scratchpad, TILES tiles of N x N 32-bit lanes (lane [r][c] at bits
// (r*N+c)*32 +: 32), with four independent ports: core read, core write, MXU read and the DMA
// engine's port (one tile read or written a cycle, rtl/dma.sv).
// Reads are synchronous: data (and err) appear the cycle after the request; a read and a write
// of the same tile in the same cycle return the old data. Every port checks its 32-bit tile
// address: an access outside [0, TILES) does not write, reads as zero and raises that port's
// err the next cycle (never masked or wrapped).
// Reset: every tile reads zero after reset, and the memory is ready the cycle after reset (no
// clear sweep; init_done_o is constant 1, kept for the users that wait on it). The storage has
// no reset; a bitmap valid_q (one bit per tile, "written since reset", async reset to 0) masks
// it: a read of a tile whose bit is 0 returns zeros, a write sets the bit, and a scatter into
// such a tile zeroes its other lanes in the same cycle.
//
// Element mode (VGATHER / VSCATTER): VMEM element e is lane e mod N*N of tile e div N*N. With
// rd_elem_i the core read port returns, in each lane l, the element at rd_eaddr_i[l] (a lane
// outside [0, TILES*N*N) reads as zero and raises rd_err_o). With wr_elem_i the core write port
// writes wr_data_i lane l to element wr_eaddr_i[l] for every lane with wr_mask_i[l], in
// increasing lane order (a later lane wins an equal address); if any masked lane is out of range
// nothing is written and wr_err_o rises. Unmasked lanes are not checked. The element inputs
// default to idle so tile-only users need not connect them.
// DMA port: dma_we_i writes dma_wdata_i, else a read returns the tile on dma_rdata_o the next
// cycle; the DMA read port (dmr_req_i) returns its tile on dmr_rdata_o the next cycle too, so the
// engine reads a DMA.OUT's tiles while a DMA.IN's arrive on the DMA port. The SXU's DMA interlocks (rtl/sxu.sv) keep the DMA's tiles apart from every other port's
// in the same cycle: a DMA write never meets a core read or write, or an MXU read, of the same
// tile, a DMA read never a core write of it (assertions below).
// Latency: 1 cycle on every port; one tile (or one element per lane) per cycle per port.
module vmem
  import tinytpu_pkg::*;
#(
  parameter int unsigned N     = 4,
  parameter int unsigned TILES = 1024,
  localparam int unsigned L    = N * N
) (
  input  logic                  clk_i,
  input  logic                  rst_ni,
  output logic                  init_done_o,
  // core read
  input  logic                  rd_req_i,
  input  logic [31:0]           rd_addr_i,
  input  logic                  rd_elem_i = 1'b0,   // element gather instead of a tile read
  input  logic [L-1:0][31:0]    rd_eaddr_i = '0,
  output logic [N*N*32-1:0]     rd_data_o,
  output logic                  rd_err_o,
  // core write
  input  logic                  wr_req_i,
  input  logic [31:0]           wr_addr_i,
  input  logic                  wr_elem_i = 1'b0,   // masked element scatter instead of a tile write
  input  logic [L-1:0]          wr_mask_i = '0,
  input  logic [L-1:0][31:0]    wr_eaddr_i = '0,
  input  logic [N*N*32-1:0]     wr_data_i,
  output logic                  wr_err_o,
  // MXU read
  input  logic                  mxu_req_i,
  input  logic [31:0]           mxu_addr_i,
  output logic [N*N*32-1:0]     mxu_data_o,
  output logic                  mxu_err_o,
  // DMA read or write
  input  logic                  dma_req_i = 1'b0,
  input  logic                  dma_we_i = 1'b0,
  input  logic [31:0]           dma_addr_i = '0,
  input  logic [N*N*32-1:0]     dma_wdata_i = '0,
  output logic [N*N*32-1:0]     dma_rdata_o,
  output logic                  dma_err_o,
  // DMA read
  input  logic                  dmr_req_i = 1'b0,
  input  logic [31:0]           dmr_addr_i = '0,
  output logic [N*N*32-1:0]     dmr_rdata_o,
  output logic                  dmr_err_o
);
  localparam int unsigned AW    = $clog2(TILES);
  localparam int unsigned LW    = $clog2(L);
  localparam logic [31:0] ELEMS = 32'(TILES * L);

  `include "assert.svh"
  `ASSERT_INIT(NPow2, N >= 2 && N <= 16 && (N & (N - 1)) == 0)
  // element addresses are 32 bits: every element of the memory must have one
  `ASSERT_INIT(ElemsFit32, 64'(TILES) * 64'(L) <= 64'h1_0000_0000)

  logic [N*N*32-1:0] mem_q [TILES];
  logic [TILES-1:0]  valid_q;  // tile written since reset; a 0 masks whatever mem_q holds
  logic              rd_ok, wr_ok, mxu_ok, dma_ok, dma_wr, dmr_ok;

  // element mode: per-lane range checks and the gathered lanes
  logic [L-1:0]      rd_in, wr_in;
  logic [N*N*32-1:0] gather;
  always_comb begin
    gather = '0;
    for (int l = 0; l < int'(L); l++) begin
      rd_in[l] = rd_eaddr_i[l] < ELEMS;
      wr_in[l] = !wr_mask_i[l] || wr_eaddr_i[l] < ELEMS;
      // an element in range lies in a tile in range (the tile index below is its upper bits)
      if (rd_elem_i && rd_in[l]) `ASSERT_I(GatherTileInRange, 32'(rd_eaddr_i[l][LW +: AW]) < 32'(TILES))
      if (rd_elem_i && rd_in[l] && valid_q[rd_eaddr_i[l][LW +: AW]])
        gather[l*32 +: 32] = mem_q[rd_eaddr_i[l][LW +: AW]][{rd_eaddr_i[l][LW-1:0], 5'd0} +: 32];
    end
  end

  assign rd_ok  = rd_elem_i ? &rd_in : rd_addr_i < 32'(TILES);
  assign wr_ok  = wr_elem_i ? &wr_in : wr_addr_i < 32'(TILES);
  assign mxu_ok = mxu_addr_i < 32'(TILES);
  assign dma_ok = dma_addr_i < 32'(TILES);
  assign dmr_ok = dmr_addr_i < 32'(TILES);
  assign dma_wr = dma_req_i && dma_we_i && dma_ok;

  // one bit per write, never a loop over TILES: reset clears the whole vector at once
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      valid_q <= '0;
    end else begin
      if (wr_req_i && wr_ok) begin
        if (!wr_elem_i) valid_q[wr_addr_i[AW-1:0]] <= 1'b1;
        else begin
          for (int l = 0; l < int'(L); l++)
            if (wr_mask_i[l]) valid_q[wr_eaddr_i[l][LW +: AW]] <= 1'b1;
        end
      end
      if (dma_wr) valid_q[dma_addr_i[AW-1:0]] <= 1'b1;
    end
  end

  // the storage itself has no reset (valid_q masks it); a DMA write never meets a core write of
  // the same tile (assertion below), so the order of the two writes here does not matter
  always_ff @(posedge clk_i) begin
    if (dma_wr) mem_q[dma_addr_i[AW-1:0]] <= dma_wdata_i;
    if (wr_req_i && wr_ok) begin
      if (!wr_elem_i) begin
        mem_q[wr_addr_i[AW-1:0]] <= wr_data_i;
      end else begin
        // a tile not written since reset is zeroed first, so its other lanes read zero; the lane
        // writes below come later in this block and so win over that zero
        for (int l = 0; l < int'(L); l++) begin
          if (wr_mask_i[l] && !valid_q[wr_eaddr_i[l][LW +: AW]]) mem_q[wr_eaddr_i[l][LW +: AW]] <= '0;
        end
        // in lane order: the last nonblocking write to an element wins
        for (int l = 0; l < int'(L); l++) begin
          if (wr_mask_i[l])
            mem_q[wr_eaddr_i[l][LW +: AW]][{wr_eaddr_i[l][LW-1:0], 5'd0} +: 32] <= wr_data_i[l*32 +: 32];
        end
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rd_data_o  <= '0;
      mxu_data_o <= '0;
      dma_rdata_o <= '0;
      dma_err_o  <= 1'b0;
      dmr_rdata_o <= '0;
      dmr_err_o  <= 1'b0;
      rd_err_o   <= 1'b0;
      wr_err_o   <= 1'b0;
      mxu_err_o  <= 1'b0;
    end else begin
      // a gather returns its in-range lanes even when another lane is out of range
      if (rd_req_i && rd_elem_i) rd_data_o <= gather;
      else rd_data_o <= rd_req_i && rd_ok && valid_q[rd_addr_i[AW-1:0]] ? mem_q[rd_addr_i[AW-1:0]] : '0;
      mxu_data_o <= mxu_req_i && mxu_ok && valid_q[mxu_addr_i[AW-1:0]] ? mem_q[mxu_addr_i[AW-1:0]] : '0;
      dma_rdata_o <= dma_req_i && !dma_we_i && dma_ok && valid_q[dma_addr_i[AW-1:0]] ? mem_q[dma_addr_i[AW-1:0]] : '0;
      dma_err_o  <= dma_req_i && !dma_ok;
      dmr_rdata_o <= dmr_req_i && dmr_ok && valid_q[dmr_addr_i[AW-1:0]] ? mem_q[dmr_addr_i[AW-1:0]] : '0;
      dmr_err_o  <= dmr_req_i && !dmr_ok;
      rd_err_o   <= rd_req_i && !rd_ok;
      wr_err_o   <= wr_req_i && !wr_ok;
      mxu_err_o  <= mxu_req_i && !mxu_ok;
    end
  end

  assign init_done_o = 1'b1;

  // an access outside [0, TILES) (a tile, or any masked element) writes nothing: the only tile that
  // may become valid in that cycle is the DMA port's own write
  // assertion support: begin
  /*verilator coverage_off*/  // not design logic: no code coverage points
  logic [TILES-1:0] dma_set_q, dma_set_d;  // the tile the DMA port's write of the last cycle marks valid
  always_comb dma_set_d = dma_wr ? TILES'(1) << dma_addr_i[AW-1:0] : '0;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) dma_set_q <= '0;
    else         dma_set_q <= dma_set_d;
  end
  /*verilator coverage_on*/
  // assertion support: end
  `ASSERT(BadWriteWritesNothing, wr_req_i && !wr_ok |=> (valid_q & ~dma_set_q) == ($past(valid_q) & ~dma_set_q))
  // a tile not written since reset reads zero, on both read ports
  `ASSERT(UnwrittenReadsZero, rd_req_i && !rd_elem_i && !(rd_ok && valid_q[rd_addr_i[AW-1:0]]) |=> rd_data_o == '0)
  `ASSERT(MxuUnwrittenReadsZero, mxu_req_i && !(mxu_ok && valid_q[mxu_addr_i[AW-1:0]]) |=> mxu_data_o == '0)
  // known controls and flags after reset
  `ASSERT_KNOWN(ReqKnown, {rd_req_i, wr_req_i, mxu_req_i})
  `ASSERT(RdAddrKnown, rd_req_i |-> !$isunknown(rd_elem_i) && !$isunknown(rd_elem_i ? '0 : rd_addr_i))
  `ASSERT(RdElemAddrKnown, rd_req_i && rd_elem_i |-> !$isunknown(rd_eaddr_i))
  `ASSERT(WrAddrKnown, wr_req_i |-> !$isunknown(wr_elem_i) && !$isunknown(wr_elem_i ? '0 : wr_addr_i))
  `ASSERT(WrElemAddrKnown, wr_req_i && wr_elem_i |-> !$isunknown({wr_mask_i, wr_eaddr_i}))
  `ASSERT(MxuAddrKnown, mxu_req_i |-> !$isunknown(mxu_addr_i))
  `ASSERT_KNOWN(ErrKnown, {rd_err_o, wr_err_o, mxu_err_o, dma_err_o, dmr_err_o})
  `ASSERT_KNOWN(DmaReqKnown, dma_req_i)
  `ASSERT(DmaAddrKnown, dma_req_i |-> !$isunknown({dma_we_i, dma_addr_i}))

  // the outputs out of reset: the cycle after reset is released every error flag and read data is 0
  // (a wrong reset value would show only in that cycle, before the first edge recomputes it)
  // assertion support: begin
  /*verilator coverage_off*/  // not design logic: no code coverage points
  logic first_q;
  // 0 until a reset: under X-randomised initial values (+verilator+rand+reset+2) a clock edge before the
  // bench first drives reset would otherwise see a random first_q against random outputs
  initial first_q = 1'b0;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) first_q <= 1'b1;
    else         first_q <= 1'b0;
  end
  /*verilator coverage_on*/
  // assertion support: end
  // one comparison per port: a concatenation of the four data ports passes Verilator's replication
  // limit (8192 bits) at N = 8
  `ASSERT(OutOfResetClean, first_q |-> {rd_err_o, wr_err_o, mxu_err_o, dma_err_o, dmr_err_o} == '0 && rd_data_o == '0
                                        && mxu_data_o == '0 && dma_rdata_o == '0 && dmr_rdata_o == '0)

  // the DMA port's tile is no other port's in the same cycle (the SXU's DMA interlocks): a DMA
  // write against a core read, a core write and an MXU read, a DMA read against a core write
  // assertion support: begin (read by the assertions only, not mutated: tinytpu/mutate.py)
  /*verilator coverage_off*/  // not design logic: no code coverage points
  logic dma_hit_rd, dma_hit_wr;
  always_comb begin
    dma_hit_rd = 1'b0;
    dma_hit_wr = 1'b0;
    if (dma_req_i && dma_ok) begin
      if (rd_req_i && !rd_elem_i && rd_addr_i == dma_addr_i) dma_hit_rd = 1'b1;
      if (wr_req_i && !wr_elem_i && wr_addr_i == dma_addr_i) dma_hit_wr = 1'b1;
      for (int l = 0; l < int'(L); l++) begin
        if (rd_req_i && rd_elem_i && rd_in[l] && 32'(rd_eaddr_i[l] >> LW) == dma_addr_i) dma_hit_rd = 1'b1;
        if (wr_req_i && wr_elem_i && wr_mask_i[l] && 32'(wr_eaddr_i[l] >> LW) == dma_addr_i) dma_hit_wr = 1'b1;
      end
    end
  end
  /*verilator coverage_on*/
  // assertion support: end
  `ASSERT_NEVER(DmaWriteVsCoreRead, dma_req_i && dma_we_i && dma_hit_rd)
  `ASSERT_NEVER(DmaWriteVsMxuRead, dma_req_i && dma_we_i && dma_ok && mxu_req_i && mxu_addr_i == dma_addr_i)
  `ASSERT_NEVER(DmaVsCoreWrite, dma_hit_wr)
  // the DMA read port's tile is never written in the same cycle (by the core, the DMA port)
  `ASSERT_NEVER(DmaReadVsCoreWrite, dmr_req_i && dmr_ok && wr_req_i && !wr_elem_i && wr_addr_i == dmr_addr_i)
  `ASSERT_NEVER(DmaReadVsDmaWrite, dmr_req_i && dmr_ok && dma_req_i && dma_we_i && dma_addr_i == dmr_addr_i)
endmodule
