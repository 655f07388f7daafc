// mxu: the matrix unit. An N x N weight-stationary systolic array (mxu_array) of PEs with a
// shadow weight bank, int8 x int8 -> int32 or bf16 x bf16 -> fp32 per MMUL, fed from its own VMEM
// read port and writing (or accumulating) result rows into PSUM through its own port.
//
// Commands (ready/valid, in order, through a CMDQ_DEPTH-entry queue):
//   MLW  (cmd_mlw_i = 1): cmd_w_i is the weight tile read from VMEM; of each lane the bits an
//        MMUL may use are kept: 7:0 (int8) and 31:16 (bf16). It is written into the idle bank
//        once no row in flight still reads that bank, and every later MMUL uses it, in either
//        mode (the weights have no mode: an MMUL.BF16 after any MLW reads the high halves).
//   MMUL (cmd_mlw_i = 0, cmd_bf16_i = 0): for t < T, r < N: PSUM[paddr+t] row r (= or +=)
//        int8(VMEM[vaddr+t] row r) x int8(W), int32 wrap.
//   MMUL.BF16 (cmd_mlw_i = 0, cmd_bf16_i = 1): the same with x = bf16 (lane bits 31:16, bits
//        15:0 ignored) and fp32 sums: s[n] = x0*W[0][n], then s += xk*W[k][n] for k = 1..N-1 in
//        order (mxu_array), every op fp32_pkg's (RNE, subnormals, canonical NaN); PSUM = s or
//        PSUM fp32+ s (psum_fp_o tells PSUM to add as fp32).
//   A command with T = 0 or a tile outside VMEM/PSUM is dropped and flags err_o (a pulse).
//
// Pipeline: queue -> fetch (one VMEM tile read per cycle, 1-cycle read latency) -> 3-entry tile
// buffer -> emit (one activation row per cycle into the array) -> array (2N-1 cycles) -> PSUM
// row write. An MMUL that finds the fetch stage free (queue empty, or its only entry an MLW
// leaving now) reads its first tile in its accept cycle, bypassing the queue; an empty tile buffer
// is bypassed too (a tile or MLW is used in the cycle it arrives). Back-to-back MMULs stream with
// no bubble; an MLW costs one cycle in the emit stage (the third buffer entry lets the next MMUL's
// first tile be read while the MLW waits in the buffer) plus a wait while the shadow bank is still
// used by rows in flight (stall_o).
// Latency: a row is written to PSUM 2N-1 cycles after it enters the array (row_o); the first row
// of an MMUL accepted into an idle MXU enters 1 cycle after acceptance, so its last PSUM write
// lands at accept + 1 + T*N - 1 + 2N-1, i.e. after T*N + 2N cycles (fill/drain 2N). The same for
// MMUL.BF16: every row carries its mode through the array and the sideband, each PE does its fp32
// multiply-add in its one cycle, so the two modes share every timing rule and interleave freely.
module mxu
  import tinytpu_pkg::*;
#(
  parameter int unsigned N          = 4,
  parameter int unsigned VMEM_TILES = 1024,
  parameter int unsigned PSUM_TILES = 64,
  parameter int unsigned CMDQ_DEPTH = 2
) (
  input  logic                          clk_i,
  input  logic                          rst_ni,
  // command port
  input  logic                          cmd_valid_i,
  output logic                          cmd_ready_o,
  input  logic                          cmd_mlw_i,
  input  logic [N*N*32-1:0]             cmd_w_i,
  input  logic [31:0]                   cmd_paddr_i,
  input  logic [31:0]                   cmd_vaddr_i,
  input  logic [7:0]                    cmd_t_i,
  input  logic                          cmd_acc_i,
  input  logic                          cmd_bf16_i,  // MMUL: bf16 x bf16 -> fp32 (MMUL.BF16)
  output logic                          err_o,
  // VMEM read port: data on vmem_rdata_i the cycle after vmem_req_o (addresses are pre-checked)
  output logic                          vmem_req_o,
  output logic [31:0]                   vmem_addr_o,
  input  logic [N*N*32-1:0]             vmem_rdata_i,
  // PSUM row write port (psum_acc_o: add to the stored row instead of overwriting it; int32, or
  // fp32 when psum_fp_o)
  output logic                          psum_we_o,
  output logic                          psum_acc_o,
  output logic                          psum_fp_o,   // with psum_acc_o: the add is fp32 (MMUL.BF16)
  output logic [31:0]                   psum_addr_o,
  output logic [$clog2(N)-1:0]          psum_row_o,
  output logic [N*32-1:0]               psum_wdata_o,
  // status
  output logic                          busy_o,
  output logic                          row_o,    // a row entered the array: N*N MACs
  output logic                          stall_o,  // an MLW waits for the shadow bank to drain
  // an MMUL's last VMEM tile is read now / its last result row is written now (in command order:
  // the SXU's ownership ranges, mxu_own)
  output logic                          vdone_o,
  output logic                          pdone_o
);
  localparam int unsigned VA_W = $clog2(VMEM_TILES);
  localparam int unsigned PA_W = $clog2(PSUM_TILES);
  localparam int unsigned RW   = $clog2(N);
  localparam int unsigned LAT  = 2 * N - 1;  // array latency, row in to row out
  localparam int unsigned QW   = $clog2(CMDQ_DEPTH) + 1;
  localparam int unsigned QI   = CMDQ_DEPTH > 1 ? $clog2(CMDQ_DEPTH) : 1;
  // tile buffer depth: one tile streaming, one prefetched, and one more so an MLW waiting in the
  // buffer does not keep the next MMUL's first tile from being read
  localparam int unsigned TBD  = 3;

  `include "assert.svh"
  // er_q wraps from row N-1 to 0 by overflow: N must be a power of two
  `ASSERT_INIT(NPow2, N >= 2 && N <= 16 && (N & (N - 1)) == 0)
  `ASSERT_INIT(CmdQDepth, CMDQ_DEPTH >= 1)
  // the command port is valid/ready: an offered command stays, unchanged, until it is taken
  `ASSERT(CmdHeld, cmd_valid_i && !cmd_ready_o |=> cmd_valid_i)
  `ASSERT(CmdStable, cmd_valid_i && !cmd_ready_o |=> $stable({cmd_mlw_i, cmd_paddr_i, cmd_vaddr_i, cmd_t_i, cmd_acc_i, cmd_bf16_i}))
  `ASSERT_KNOWN(CmdValidKnown, cmd_valid_i)
  `ASSERT(CmdKnown, cmd_valid_i |-> !$isunknown({cmd_mlw_i, cmd_paddr_i, cmd_vaddr_i, cmd_t_i, cmd_acc_i, cmd_bf16_i}))

  typedef struct packed {
    logic              mlw;
    logic [N*N*24-1:0] w;
    logic [PA_W-1:0]   paddr;
    logic [VA_W-1:0]   vaddr;
    logic [7:0]        t;
    logic              acc;
    logic              bf16;
  } cmd_t;

  typedef struct packed {
    logic              mlw;
    logic [N*N*24-1:0] data;   // MLW: weights; MMUL: the activation tile (lanes(): 24 bits a lane)
    logic [PA_W-1:0]   paddr;  // MMUL: the PSUM tile of this activation tile
    logic              acc;
    logic              bf16;   // MMUL: bf16 mode
    logic              last;   // MMUL: the command's last tile
  } tile_t;

  typedef struct packed {
    logic              valid;
    logic              bank;
    logic [PA_W-1:0]   paddr;
    logic [RW-1:0]     row;
    logic              acc;
    logic              bf16;
    logic              last;   // the command's last row
  } side_t;

  // the bits of a lane either mode may use: {bf16 = lane[31:16], int8 = lane[7:0]}
  function automatic logic [N*N*24-1:0] lanes(logic [N*N*32-1:0] t);
    for (int i = 0; i < N * N; i++) lanes[24*i +: 24] = {t[32*i+16 +: 16], t[32*i +: 8]};
  endfunction

  // ---------------------------------------------------------------------------------------------
  // command queue, with the range check on entry
  cmd_t            q_q [CMDQ_DEPTH];
  logic [QI-1:0]   q_wr_q, q_rd_q;
  logic [QW-1:0]   q_cnt_q;
  logic            q_push, q_pop, cmd_bad, err_q, issue_c;
  logic [32:0]     p_end, v_end;

  assign cmd_ready_o = q_cnt_q < QW'(CMDQ_DEPTH);
  assign p_end   = {1'b0, cmd_paddr_i} + 33'(cmd_t_i);
  assign v_end   = {1'b0, cmd_vaddr_i} + 33'(cmd_t_i);
  assign cmd_bad = !cmd_mlw_i && (cmd_t_i == 8'd0 || p_end > 33'(PSUM_TILES) || v_end > 33'(VMEM_TILES));
  // an MMUL of one tile fetched in its accept cycle (issue_c) never enters the queue
  assign q_push  = cmd_valid_i && cmd_ready_o && !cmd_bad && !(issue_c && cmd_t_i == 8'd1);

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      q_wr_q  <= '0;
      q_rd_q  <= '0;
      q_cnt_q <= '0;
      err_q   <= 1'b0;
      for (int i = 0; i < int'(CMDQ_DEPTH); i++) q_q[i] <= '0;
    end else begin
      err_q <= cmd_valid_i && cmd_ready_o && cmd_bad;
      if (q_push) begin
        q_q[q_wr_q] <= '{mlw: cmd_mlw_i, w: lanes(cmd_w_i), paddr: cmd_paddr_i[PA_W-1:0],
                         vaddr: cmd_vaddr_i[VA_W-1:0], t: cmd_t_i, acc: cmd_acc_i, bf16: cmd_bf16_i};
        q_wr_q <= q_wr_q == QI'(CMDQ_DEPTH - 1) ? '0 : q_wr_q + 1'b1;
      end
      if (q_pop) q_rd_q <= q_rd_q == QI'(CMDQ_DEPTH - 1) ? '0 : q_rd_q + 1'b1;
      q_cnt_q <= q_cnt_q + QW'(q_push) - QW'(q_pop);
    end
  end
  assign err_o = err_q;

  // the command queue never overflows or underflows
  `ASSERT(CmdQNoOverflow, q_push |-> q_cnt_q < QW'(CMDQ_DEPTH))
  `ASSERT(CmdQNoUnderflow, q_pop |-> q_cnt_q != '0)
  `ASSERT(CmdQCountInRange, q_cnt_q <= QW'(CMDQ_DEPTH))

  // ---------------------------------------------------------------------------------------------
  // fetch: walk the head command; MMUL reads its T tiles, MLW forwards its weights. An MMUL that
  // arrives while the fetch stage has nothing else to do reads its first tile at once (issue_c).
  cmd_t          head;
  logic          head_v;
  logic [7:0]    ft_q;            // next tile of the head MMUL
  logic          rd_pend_q;       // a VMEM read was issued last cycle: its data is here now
  logic [PA_W-1:0] rd_paddr_q;
  logic          rd_acc_q, rd_bf16_q, rd_last_q, last_read;
  logic [1:0]    tb_cnt_q;        // tile buffer occupancy (0..TBD)
  logic [2:0]    tb_used;         // entries taken or promised: buffered, read in flight, MLW moving in
  logic          issue_q, issue, mlw_fwd, tb_push, tb_pop;
  tile_t         tb_in;

  assign head    = q_q[q_rd_q];
  assign head_v  = q_cnt_q != '0;
  assign mlw_fwd = head_v && head.mlw && !rd_pend_q && tb_cnt_q < 2'(TBD);
  assign tb_used = 3'(tb_cnt_q) + 3'(rd_pend_q) + 3'(mlw_fwd);
  assign issue_q = head_v && !head.mlw && tb_used < 3'(TBD);
  // the queue is empty, or its only entry is an MLW forwarded this cycle: nothing is ahead
  assign issue_c = cmd_valid_i && cmd_ready_o && !cmd_bad && !cmd_mlw_i && tb_used < 3'(TBD) &&
                   (q_cnt_q == '0 || (q_cnt_q == QW'(1) && mlw_fwd));
  assign issue   = issue_q || issue_c;
  assign q_pop   = mlw_fwd || (issue_q && ft_q == head.t - 8'd1);

  assign vmem_req_o  = issue;
  // the read of an MMUL's last tile: the VMEM read port samples it now, a later write is unseen
  assign last_read   = (issue_c && cmd_t_i == 8'd1) || (issue_q && q_pop);
  assign vdone_o     = last_read;
  assign vmem_addr_o = issue_c ? 32'(cmd_vaddr_i[VA_W-1:0]) : 32'(head.vaddr + VA_W'(ft_q));

  // one fetch source a cycle: the head command's next tile, a bypassing MMUL or the head MLW
  `ASSERT_ONEHOT0(OneFetch, {issue_q, issue_c})
  `ASSERT_NEVER(MlwWithHeadRead, mlw_fwd && issue_q)
  `ASSERT_NEVER(MlwWithReadData, mlw_fwd && rd_pend_q)
  // commands were range-checked on entry: every tile read is inside VMEM
  `ASSERT(VmemAddrInRange, vmem_req_o |-> vmem_addr_o < 32'(VMEM_TILES))

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      ft_q       <= '0;
      rd_pend_q  <= 1'b0;
      rd_paddr_q <= '0;
      rd_acc_q   <= 1'b0;
      rd_bf16_q  <= 1'b0;
      rd_last_q  <= 1'b0;
    end else begin
      rd_pend_q <= issue;
      if (issue_c) begin
        // the rest of the MMUL (if any) is the head next cycle, at its second tile
        rd_paddr_q <= cmd_paddr_i[PA_W-1:0];
        rd_acc_q   <= cmd_acc_i;
        rd_bf16_q  <= cmd_bf16_i;
        rd_last_q  <= cmd_t_i == 8'd1;
        ft_q       <= cmd_t_i == 8'd1 ? 8'd0 : 8'd1;
      end else if (issue_q) begin
        rd_paddr_q <= head.paddr + PA_W'(ft_q);
        rd_acc_q   <= head.acc;
        rd_bf16_q  <= head.bf16;
        rd_last_q  <= q_pop;
        ft_q       <= q_pop ? 8'd0 : ft_q + 8'd1;
      end
    end
  end

  assign tb_push = rd_pend_q || mlw_fwd;
  always_comb begin
    tb_in = '{mlw: 1'b0, data: lanes(vmem_rdata_i), paddr: rd_paddr_q, acc: rd_acc_q, bf16: rd_bf16_q, last: rd_last_q};
    if (!rd_pend_q) tb_in = '{mlw: 1'b1, data: head.w, paddr: '0, acc: 1'b0, bf16: 1'b0, last: 1'b0};
  end

  // ---------------------------------------------------------------------------------------------
  // tile buffer: TBD entries, so the next tiles are read while the current one is streamed. When
  // it is empty the arriving entry is also the head (used in its arrival cycle); if it is popped
  // at once, both pointers step past it.
  tile_t       tb_q [TBD];
  logic [1:0]  tb_wr_q, tb_rd_q;

  // the tile buffer never overflows or underflows (an empty buffer may pop what arrives now)
  `ASSERT(TileBufNoOverflow, tb_push && !tb_pop |-> tb_cnt_q < 2'(TBD))
  `ASSERT(TileBufNoUnderflow, tb_pop |-> tb_cnt_q != '0 || tb_push)
  `ASSERT(TileBufCountInRange, tb_cnt_q <= 2'(TBD))

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      for (int i = 0; i < int'(TBD); i++) tb_q[i] <= '0;
      tb_wr_q  <= '0;
      tb_rd_q  <= '0;
      tb_cnt_q <= '0;
    end else begin
      if (tb_push) begin
        tb_q[tb_wr_q] <= tb_in;
        tb_wr_q <= tb_wr_q == 2'(TBD - 1) ? '0 : tb_wr_q + 2'd1;
      end
      if (tb_pop) tb_rd_q <= tb_rd_q == 2'(TBD - 1) ? '0 : tb_rd_q + 2'd1;
      tb_cnt_q <= tb_cnt_q + 2'(tb_push) - 2'(tb_pop);
    end
  end

  // ---------------------------------------------------------------------------------------------
  // emit: one activation row per cycle, or apply an MLW to the idle bank
  tile_t         cur;
  logic          cur_v, wbank_q, other_busy, row_in, w_we;
  logic [RW-1:0] er_q;
  side_t         side_q [LAT];

  assign cur   = tb_cnt_q != '0 ? tb_q[tb_rd_q] : tb_in;
  assign cur_v = tb_cnt_q != '0 || tb_push;

  // A row that entered at e is in side_q[s] at e+1+s and its last PE reads its weight bank at
  // e + LAT-1, i.e. while it is in side_q[LAT-3] at the latest; a weight write takes effect the
  // cycle after w_we. So the idle bank may be overwritten once no row on it is in side_q[0..LAT-3].
  logic any_side;
  always_comb begin
    other_busy = 1'b0;
    any_side   = 1'b0;
    for (int s = 0; s < int'(LAT); s++) begin
      if (s < int'(LAT) - 2) other_busy |= side_q[s].valid && side_q[s].bank != wbank_q;
      any_side |= side_q[s].valid;
    end
  end

  assign row_in  = cur_v && !cur.mlw;
  assign w_we    = cur_v && cur.mlw && !other_busy;
  assign stall_o = cur_v && cur.mlw && other_busy;
  assign tb_pop  = w_we || (row_in && er_q == RW'(N - 1));
  assign row_o   = row_in;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      er_q    <= '0;
      wbank_q <= 1'b0;
    end else begin
      if (row_in) er_q <= er_q + 1'b1;  // wraps to 0 after row N-1 (N is a power of two)
      if (w_we) wbank_q <= !wbank_q;
    end
  end

  // row/PSUM sideband, aligned with the array latency
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      for (int s = 0; s < int'(LAT); s++) side_q[s] <= '0;
    end else begin
      side_q[0] <= '{valid: row_in, bank: wbank_q, paddr: cur.paddr, row: er_q, acc: cur.acc, bf16: cur.bf16,
                     last: cur.last && er_q == RW'(N - 1)};
      for (int s = 1; s < int'(LAT); s++) side_q[s] <= side_q[s-1];
    end
  end

  // the activation row of the mode: element k is the lane's bf16 or its int8 (high byte zero)
  logic [N*16-1:0] a_row;
  always_comb begin
    for (int k = 0; k < N; k++) begin
      a_row[16*k +: 16] = cur.bf16 ? cur.data[24*(N*er_q+k)+8 +: 16] : {8'd0, cur.data[24*(N*er_q+k) +: 8]};
    end
  end

  mxu_array #(.N(N)) u_array (
    .clk_i,
    .rst_ni,
    .w_we_i   (w_we),
    .w_bank_i (!wbank_q),
    .w_i      (cur.data),
    .a_i      (a_row),
    .bank_i   (wbank_q),
    .fp_i     (row_in && cur.bf16),
    .sum_o    (psum_wdata_o)
  );

  assign psum_we_o   = side_q[LAT-1].valid;
  assign psum_acc_o  = side_q[LAT-1].acc;
  assign psum_fp_o   = side_q[LAT-1].bf16;
  assign psum_addr_o = 32'(side_q[LAT-1].paddr);
  assign psum_row_o  = side_q[LAT-1].row;
  assign pdone_o     = side_q[LAT-1].valid && side_q[LAT-1].last;

  assign busy_o = q_cnt_q != '0 || rd_pend_q || tb_cnt_q != '0 || any_side;

  // an emit cycle streams a row or writes weights, never both; weights go to a bank no row in
  // flight still reads
  `ASSERT_NEVER(RowAndWeightWrite, row_in && w_we)
  `ASSERT(WeightBankFree, w_we |-> !other_busy)
  // every row lands inside PSUM, on a known address
  `ASSERT(PsumAddrInRange, psum_we_o |-> psum_addr_o < 32'(PSUM_TILES))
  `ASSERT(PsumWriteKnown, psum_we_o |-> !$isunknown({psum_acc_o, psum_fp_o, psum_addr_o, psum_row_o, psum_wdata_o}))
  // an MLW carries no mode; a bf16 row is an MMUL row
  `ASSERT_NEVER(MlwWithMode, cur_v && cur.mlw && cur.bf16)
  `ASSERT_KNOWN(StatusKnown, {err_o, busy_o, row_o, stall_o, cmd_ready_o, vmem_req_o, psum_we_o})
endmodule
