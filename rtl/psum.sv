// psum: the MXU accumulator memory, TILES tiles of N x N int32 lanes (lane [r][c] at bits
// (r*N+c)*32 +: 32), with three ports: core read (tile), core write (tile) and the MXU's row
// write, which either overwrites row r of a tile or adds to it (read-modify-write in the same
// cycle): int32 wrap, or with mxu_fp_i (MMUL.BF16) the fp32 sum old + row per lane
// (fp32_pkg::add: RNE, subnormals, canonical NaN).
// Core reads are synchronous (data and err the cycle after the request) and see the memory
// before that cycle's writes. If the core and the MXU write the same tile in one cycle (the core
// interlocks so it does not), the core's tile is written first and the MXU row on top of it.
// Every port checks its 32-bit tile address: an access outside [0, TILES) does not write, reads
// as zero and raises that port's err the next cycle.
// Reset: every tile reads zero after reset (core reads and the MXU accumulate alike), and the
// memory is ready the cycle after reset (no clear sweep; init_done_o is constant 1, kept for the
// users that wait on it). The storage has no reset; a bitmap valid_q (one bit per tile, "written
// since reset", async reset to 0) masks it: a tile whose bit is 0 reads zero, a core tile write
// sets the bit, and an MXU row write into such a tile zeroes its other rows in the same cycle.
// Latency: 1 cycle on every port; one tile (core) or one row (MXU) per cycle.
module psum
  import tinytpu_pkg::*;
#(
  parameter int unsigned N     = 4,
  parameter int unsigned TILES = 64
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,
  output logic                 init_done_o,
  // core read
  input  logic                 rd_req_i,
  input  logic [31:0]          rd_addr_i,
  output logic [N*N*32-1:0]    rd_data_o,
  output logic                 rd_err_o,
  // core write
  input  logic                 wr_req_i,
  input  logic [31:0]          wr_addr_i,
  input  logic [N*N*32-1:0]    wr_data_i,
  output logic                 wr_err_o,
  // MXU row write / accumulate
  input  logic                 mxu_we_i,
  input  logic                 mxu_acc_i,
  input  logic                 mxu_fp_i,
  input  logic [31:0]          mxu_addr_i,
  input  logic [$clog2(N)-1:0] mxu_row_i,
  input  logic [N*32-1:0]      mxu_data_i,
  output logic                 mxu_err_o
);
  localparam int unsigned AW = $clog2(TILES);

  `include "assert.svh"
  // mxu_row_i is log2(N) bits wide: every value is a row
  `ASSERT_INIT(NPow2, N >= 2 && N <= 16 && (N & (N - 1)) == 0)

  logic [N*N*32-1:0] mem_q [TILES];
  logic [TILES-1:0]  valid_q;  // tile written since reset; a 0 masks whatever mem_q holds
  logic              rd_ok, wr_ok, mxu_ok, mxu_fresh;
  logic [N*32-1:0]   old_row, new_row;

  assign rd_ok  = rd_addr_i < 32'(TILES);
  assign wr_ok  = wr_addr_i < 32'(TILES);
  assign mxu_ok = mxu_addr_i < 32'(TILES);

  // one bit per write, never a loop over TILES: reset clears the whole vector at once
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      valid_q <= '0;
    end else begin
      if (wr_req_i && wr_ok) valid_q[wr_addr_i[AW-1:0]] <= 1'b1;
      if (mxu_we_i && mxu_ok) valid_q[mxu_addr_i[AW-1:0]] <= 1'b1;
    end
  end

  // accumulate lane by lane (int32 wrap) into the row as stored before this cycle (zero in a tile
  // not written since reset)
  assign mxu_fresh = !valid_q[mxu_addr_i[AW-1:0]];
  assign old_row   = mxu_fresh ? '0 : mem_q[mxu_addr_i[AW-1:0]][N*32*mxu_row_i +: N*32];
  // (an fp32 accumulate adds lane by lane in one small loop, evaluated only for such a write)
  always_comb begin
    if (mxu_acc_i && mxu_fp_i) begin
      /*verilator unroll_disable*/
      for (int n = 0; n < N; n++)
        new_row[32*n +: 32] = fp32_pkg::add(old_row[32*n +: 32], mxu_data_i[32*n +: 32]);
    end else begin
      for (int n = 0; n < N; n++)
        new_row[32*n +: 32] = mxu_data_i[32*n +: 32] + (mxu_acc_i ? old_row[32*n +: 32] : 32'd0);
    end
  end

  // the storage has no reset (valid_q masks it). In program order, so later writes win: a fresh
  // tile under an MXU row is zeroed, then the core's tile, then the MXU row on top
  always_ff @(posedge clk_i) begin
    if (mxu_we_i && mxu_ok && mxu_fresh) mem_q[mxu_addr_i[AW-1:0]] <= '0;
    if (wr_req_i && wr_ok) mem_q[wr_addr_i[AW-1:0]] <= wr_data_i;
    if (mxu_we_i && mxu_ok) mem_q[mxu_addr_i[AW-1:0]][N*32*mxu_row_i +: N*32] <= new_row;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rd_data_o <= '0;
      rd_err_o  <= 1'b0;
      wr_err_o  <= 1'b0;
      mxu_err_o <= 1'b0;
    end else begin
      rd_data_o <= rd_req_i && rd_ok && valid_q[rd_addr_i[AW-1:0]] ? mem_q[rd_addr_i[AW-1:0]] : '0;
      rd_err_o  <= rd_req_i && !rd_ok;
      wr_err_o  <= wr_req_i && !wr_ok;
      mxu_err_o <= mxu_we_i && !mxu_ok;
    end
  end

  assign init_done_o = 1'b1;

  // an access outside [0, TILES) writes nothing (when the other write port is idle)
  `ASSERT(BadWriteWritesNothing, wr_req_i && !wr_ok && !mxu_we_i |=> $stable(valid_q))
  `ASSERT(BadMxuWriteWritesNothing, mxu_we_i && !mxu_ok && !wr_req_i |=> $stable(valid_q))
  // a tile not written since reset reads zero
  `ASSERT(UnwrittenReadsZero, rd_req_i && !(rd_ok && valid_q[rd_addr_i[AW-1:0]]) |=> rd_data_o == '0)
  // known controls and flags after reset
  `ASSERT_KNOWN(ReqKnown, {rd_req_i, wr_req_i, mxu_we_i})
  `ASSERT(RdAddrKnown, rd_req_i |-> !$isunknown(rd_addr_i))
  `ASSERT(WrAddrKnown, wr_req_i |-> !$isunknown(wr_addr_i))
  `ASSERT(MxuWriteKnown, mxu_we_i |-> !$isunknown({mxu_acc_i, mxu_addr_i, mxu_row_i}))
  `ASSERT_KNOWN(ErrKnown, {rd_err_o, wr_err_o, mxu_err_o})

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
  // the data port on its own: with the error bits it passes Verilator's replication limit (8192 bits) at N = 16
  `ASSERT(OutOfResetClean, first_q |-> {rd_err_o, wr_err_o, mxu_err_o} == '0 && rd_data_o == '0)
endmodule
