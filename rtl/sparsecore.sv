// sparsecore: the SparseCore (doc/sparsecore.md): embedding-bag lookups EMB.BAG (int32) and
// EMB.FBAG (fp32) between HBM tiles, in the background of the TensorCore that issues them.
// A pure HBM client: the table, the index list and the pooled rows all live in HBM, so the chip
// can put it on a NoC node of its own.
//
// Contract
// - Commands (cmd_valid_i, from rtl/sxu.sv): a queue of one, accepted while cmd_ready_o (idle).
//   A command is {fp, table base, rows, width (1..EMB_W_MAX tiles), bag (1..65535), bags (1..255),
//   index list, destination}; the SXU checked every HBM range at issue (table, index list,
//   destination, the destination overlapping neither of the other two).
// - Check, then gather: the index list is read once to check every index against [0, rows)
//   (unsigned: a negative int32 is out of range); chk_valid_o pulses once per command with
//   chk_bad_o. A bad list ends the command (nothing written: the SXU traps at the EMB.BAG's pc,
//   holding its issue until this pulse). Otherwise the list is read again, tile by tile (a buffer
//   of IDEPTH index tiles), and for every index j of bag b the row's `width` tiles are requested
//   in order; bag b's pooled tile k goes to HBM dst + b*width + k.
// - Accumulation (responses come back in request order): tile k of a bag's first row starts the
//   sum, every later row adds to it (int32 wrap, or fp32_pkg::add: s = s + row, the golden's left
//   fold); the bag's last row's response completes tile k, which waits in a write buffer of
//   WDEPTH tiles for its HBM write. A last-row read is requested only while the buffer can take
//   its tile (the last-row reads in flight plus the buffered tiles stay <= WDEPTH), so a response
//   never finds the buffer full.
// - HBM port: rtl/hbm.sv's protocol (valid/ready request {we, addr, wdata}, in-order responses
//   without back-pressure); every request books an entry of the tag FIFO (OUTS >= LATENCY + 2),
//   so up to LATENCY reads are in flight. Request priority: a buffered write, an index tile, a row
//   tile. hbm_req_valid_o never depends on hbm_req_ready_i.
// - busy_o: a command accepted and not finished (its check result sent, every write
//   acknowledged); cmd_ready_o = !busy_o.
//
// Latency (an idle SparseCore and an idle HBM at one tile a cycle, LATENCY cycles): a command of
// n = bags*bag indices in I = ceil(n / (N*N)) index tiles accepted in cycle s sends its check
// result at about s + 2 + I + LATENCY; the gather then moves one tile a cycle (n*width row reads,
// I index reads and bags*width writes) and ends LATENCY cycles after its last request.
module sparsecore
  import tinytpu_pkg::*;
#(
  parameter int unsigned N           = 4,
  parameter int unsigned HBM_TILES   = 1 << 20,  // the assertion on request addresses only
  parameter int unsigned HBM_LATENCY = 100,
  localparam int unsigned L          = N * N,
  localparam int unsigned LW         = $clog2(L),
  localparam int unsigned WMAX       = EMB_W_MAX,
  localparam int unsigned KW         = $clog2(WMAX),
  localparam int unsigned IDEPTH     = 4,   // index tiles buffered for the gather
  localparam int unsigned IW         = $clog2(IDEPTH),
  localparam int unsigned WDEPTH     = 8,   // pooled tiles waiting for their HBM write
  localparam int unsigned WBW        = $clog2(WDEPTH),
  localparam int unsigned OUTS       = 1 << $clog2(HBM_LATENCY + 2),
  localparam int unsigned OW         = $clog2(OUTS)
) (
  input  logic                  clk_i,
  input  logic                  rst_ni,
  // command port (the SXU)
  input  logic                  cmd_valid_i,
  output logic                  cmd_ready_o,
  input  logic                  cmd_fp_i,
  input  logic [31:0]           cmd_tbase_i,
  input  logic [31:0]           cmd_rows_i,
  input  logic [4:0]            cmd_width_i,   // 1..EMB_W_MAX
  input  logic [15:0]           cmd_bag_i,     // 1..65535
  input  logic [7:0]            cmd_bags_i,    // 1..255
  input  logic [31:0]           cmd_idx_i,
  input  logic [31:0]           cmd_dst_i,
  output logic                  chk_valid_o,
  output logic                  chk_bad_o,
  output logic                  busy_o,
  // HBM port
  output logic                  hbm_req_valid_o,
  input  logic                  hbm_req_ready_i,
  output logic                  hbm_req_we_o,
  output logic [31:0]           hbm_req_addr_o,
  output logic [L-1:0][31:0]    hbm_req_wdata_o,
  input  logic                  hbm_rsp_valid_i,
  input  logic                  hbm_rsp_we_i,
  input  logic [L-1:0][31:0]    hbm_rsp_rdata_i
);
  `include "assert.svh"
  `ASSERT_INIT(WidthFitsField, WMAX <= 16 && (WMAX & (WMAX - 1)) == 0)

  typedef enum logic [1:0] {S_IDLE, S_CHECK, S_GATHER} state_e;
  typedef enum logic [1:0] {K_CHK, K_IDX, K_ROW, K_ACK} kind_e;

  typedef struct packed {
    logic        fp;
    logic [31:0] tbase;
    logic [31:0] rows;
    logic [4:0]  width;
    logic [15:0] bag;
    logic [7:0]  bags;
    logic [31:0] idx;
    logic [31:0] dst;
  } cmd_t;

  typedef struct packed {
    kind_e        kind;
    logic [KW-1:0] k;      // a row tile's place in the row
    logic         first;   // ... of the bag's first row
    logic         last;    // ... of the bag's last row
    logic [31:0]  waddr;   // ... its pooled tile's HBM address
  } tag_t;

  typedef struct packed {
    logic [31:0]        addr;
    logic [L-1:0][31:0] data;
  } wr_t;

  state_e      state_q, state_d;
  cmd_t        cmd_q;
  logic [23:0] n_idx;      // indices in the list (bags * bag < 2^24)
  logic [23:0] n_tiles;    // its HBM tiles
  assign n_idx   = 24'(cmd_q.bags) * 24'(cmd_q.bag);
  assign n_tiles = 24'((32'(n_idx) + L - 1) >> LW);

  assign cmd_ready_o = !busy_o;
  always_ff @(posedge clk_i) begin
    if (cmd_valid_i && cmd_ready_o)
      cmd_q <= '{fp: cmd_fp_i, tbase: cmd_tbase_i, rows: cmd_rows_i, width: cmd_width_i, bag: cmd_bag_i,
                 bags: cmd_bags_i, idx: cmd_idx_i, dst: cmd_dst_i};
  end
  `ASSERT(CmdOnlyWhenIdle, cmd_valid_i |-> cmd_ready_o)
  `ASSERT(CmdShapeLegal, cmd_valid_i |-> cmd_width_i != '0 && 32'(cmd_width_i) <= WMAX && cmd_bag_i != '0 && cmd_bags_i != '0)
  `ASSERT_KNOWN(CmdValidKnown, cmd_valid_i)

  // ---------------------------------------------------------------------------------------------
  // tag FIFO: one entry per request in flight, in request order (the HBM answers in that order)
  tag_t        tag_q [OUTS];
  logic [OW:0] twr_q, trd_q, tcnt;
  logic        tag_room, accept;
  tag_t        req_tag, rsp_tag;
  assign tcnt     = twr_q - trd_q;
  assign tag_room = 32'(tcnt) < OUTS;
  assign rsp_tag  = tag_q[trd_q[OW-1:0]];
  always_ff @(posedge clk_i) begin
    if (accept) tag_q[twr_q[OW-1:0]] <= req_tag;
  end
  `ASSERT(RspHasTag, hbm_rsp_valid_i |-> tcnt != '0)
  `ASSERT(RspKindMatchesTag, hbm_rsp_valid_i |-> hbm_rsp_we_i == (rsp_tag.kind == K_ACK))

  // ---------------------------------------------------------------------------------------------
  // index tiles: the check pass requests tile ci_q, counts responses in cr_q; the gather's fetcher
  // requests tile ci_q into the buffer (room for the tiles buffered and in flight)
  logic [23:0]        ci_q, ci_d, cr_q, cr_d;
  logic               bad_q, bad_d, chk_q, chk_bad_q, tile_bad, last_chk;
  logic [L-1:0][31:0] ibuf_q [IDEPTH];
  logic [IW:0]        iwr_q, ird_q, icnt, ifly_q, ifly_d;
  logic               want_idx, idx_go, ipop;
  assign icnt     = iwr_q - ird_q;
  assign want_idx = ci_q < n_tiles && (state_q == S_CHECK ||
                    (state_q == S_GATHER && 32'(icnt) + 32'(ifly_q) < IDEPTH));
  always_comb begin
    tile_bad = 1'b0;
    for (int l = 0; l < int'(L); l++) begin
      if ((32'(cr_q) << LW) + 32'(l) < 32'(n_idx) && hbm_rsp_rdata_i[l] >= cmd_q.rows) tile_bad = 1'b1;
    end
  end
  assign last_chk    = hbm_rsp_valid_i && rsp_tag.kind == K_CHK && cr_q == n_tiles - 24'd1;
  assign chk_valid_o = chk_q;
  assign chk_bad_o   = chk_bad_q;

  always_ff @(posedge clk_i) begin
    if (hbm_rsp_valid_i && rsp_tag.kind == K_IDX) ibuf_q[iwr_q[IW-1:0]] <= hbm_rsp_rdata_i;
  end

  // ---------------------------------------------------------------------------------------------
  // the row walker: element e (lane lp of the buffer's head tile), its bag b (place j in it), the
  // row tile k; wrow: the bag's pooled row in HBM
  logic [23:0]   e_q, e_d;
  logic [15:0]   j_q, j_d;
  logic [KW-1:0] k_q, k_d;
  logic [LW-1:0] lp_q, lp_d;
  logic [31:0]   wrow_q, wrow_d, cur_idx, row_addr;
  logic          want_row, row_go, row_last, row_first, last_fits;
  logic [WBW:0]  lfly_q, lfly_d, wcnt;
  assign cur_idx   = ibuf_q[ird_q[IW-1:0]][lp_q];
  assign row_addr  = cmd_q.tbase + cur_idx * 32'(cmd_q.width) + 32'(k_q);
  assign row_first = j_q == '0;
  assign row_last  = j_q == cmd_q.bag - 16'd1;
  assign last_fits = 32'(lfly_q) + 32'(wcnt) < WDEPTH;
  assign want_row  = state_q == S_GATHER && e_q < n_idx && icnt != '0 && (!row_last || last_fits);
  // the row's last tile moves on to the next element, popping the head tile after its last lane
  assign ipop = row_go && 32'(k_q) == 32'(cmd_q.width) - 1 && (lp_q == LW'(L - 1) || e_q == n_idx - 24'd1);

  // ---------------------------------------------------------------------------------------------
  // the accumulators (a bag's row, tile by tile) and the write buffer of pooled tiles
  logic [L-1:0][31:0] acc_q [WMAX];
  logic [L-1:0][31:0] sum;
  wr_t                wb_q [WDEPTH];
  logic [WBW:0]       wwr_q, wrd_q;
  logic               rsp_row, wpush, wpop;
  assign wcnt    = wwr_q - wrd_q;
  assign rsp_row = hbm_rsp_valid_i && rsp_tag.kind == K_ROW;
  assign wpush   = rsp_row && rsp_tag.last;
  always_comb begin
    sum = hbm_rsp_rdata_i;
    // only for a row response (which also keeps the simulation from adding every cycle)
    if (rsp_row && !rsp_tag.first) begin
      for (int l = 0; l < int'(L); l++)
        sum[l] = cmd_q.fp ? fp32_pkg::add(acc_q[rsp_tag.k][l], hbm_rsp_rdata_i[l]) : acc_q[rsp_tag.k][l] + hbm_rsp_rdata_i[l];
    end
  end
  always_ff @(posedge clk_i) begin
    if (rsp_row && !rsp_tag.last) acc_q[rsp_tag.k] <= sum;
    if (wpush) wb_q[wwr_q[WBW-1:0]] <= '{addr: rsp_tag.waddr, data: sum};
  end
  `ASSERT(WriteBufferNoOverflow, wpush |-> 32'(wcnt) < WDEPTH || wpop)
  `ASSERT(LastCredits, 32'(lfly_q) + 32'(wcnt) <= WDEPTH)

  // ---------------------------------------------------------------------------------------------
  // HBM requests: a buffered write, else an index tile, else a row tile; each books a tag
  always_comb begin
    hbm_req_valid_o = 1'b0;
    hbm_req_we_o    = 1'b0;
    hbm_req_addr_o  = '0;
    hbm_req_wdata_o = '0;
    req_tag         = '{kind: K_ACK, k: '0, first: 1'b0, last: 1'b0, waddr: '0};
    if (wcnt != '0) begin
      hbm_req_valid_o = tag_room;
      hbm_req_we_o    = 1'b1;
      hbm_req_addr_o  = wb_q[wrd_q[WBW-1:0]].addr;
      hbm_req_wdata_o = wb_q[wrd_q[WBW-1:0]].data;
    end else if (want_idx) begin
      hbm_req_valid_o = tag_room;
      hbm_req_addr_o  = cmd_q.idx + 32'(ci_q);
      req_tag.kind    = state_q == S_CHECK ? K_CHK : K_IDX;
    end else if (want_row) begin
      hbm_req_valid_o = tag_room;
      hbm_req_addr_o  = row_addr;
      req_tag         = '{kind: K_ROW, k: k_q, first: row_first, last: row_last, waddr: wrow_q + 32'(k_q)};
    end
  end
  assign accept = hbm_req_valid_o && hbm_req_ready_i;
  assign wpop   = accept && hbm_req_we_o;
  assign idx_go = accept && !hbm_req_we_o && want_idx;
  assign row_go = accept && !hbm_req_we_o && !want_idx && want_row;
  `ASSERT(ReqInRange, hbm_req_valid_o |-> hbm_req_addr_o < 32'(HBM_TILES))
  `ASSERT(IndexChecked, row_go |-> cur_idx < cmd_q.rows)
  `ASSERT_KNOWN(OutKnown, {hbm_req_valid_o, busy_o, chk_valid_o})

  // ---------------------------------------------------------------------------------------------
  // next state
  always_comb begin
    state_d = state_q;
    ci_d    = ci_q + 24'(idx_go);
    cr_d    = cr_q + 24'(hbm_rsp_valid_i && rsp_tag.kind == K_CHK);
    bad_d   = bad_q || (hbm_rsp_valid_i && rsp_tag.kind == K_CHK && tile_bad);
    ifly_d  = ifly_q + (IW+1)'(idx_go && state_q == S_GATHER) - (IW+1)'(hbm_rsp_valid_i && rsp_tag.kind == K_IDX);
    lfly_d  = lfly_q + (WBW+1)'(row_go && row_last) - (WBW+1)'(wpush);
    e_d     = e_q;
    j_d     = j_q;
    k_d     = k_q;
    lp_d    = lp_q;
    wrow_d  = wrow_q;
    if (row_go) begin
      if (32'(k_q) == 32'(cmd_q.width) - 1) begin
        k_d  = '0;
        e_d  = e_q + 24'd1;
        lp_d = lp_q + 1'b1;
        if (row_last) begin
          j_d    = '0;
          wrow_d = wrow_q + 32'(cmd_q.width);
        end else begin
          j_d = j_q + 16'd1;
        end
      end else begin
        k_d = k_q + 1'b1;
      end
    end
    unique case (state_q)
      S_IDLE: if (cmd_valid_i) begin
        state_d = S_CHECK;
        ci_d    = '0;
        cr_d    = '0;
        bad_d   = 1'b0;
      end
      S_CHECK: if (last_chk) begin
        state_d = bad_d ? S_IDLE : S_GATHER;
        ci_d    = '0;   // the gather reads the list again from its first tile
        e_d     = '0;
        j_d     = '0;
        k_d     = '0;
        lp_d    = '0;
        wrow_d  = cmd_q.dst;
      end
      S_GATHER: if (e_q == n_idx && tcnt == '0 && wcnt == '0) state_d = S_IDLE;
      default: ;
    endcase
  end
  // busy until the check result is out (a bad list ends the command in the cycle before)
  assign busy_o = state_q != S_IDLE || chk_q;
  `ASSERT(IdleNothingInFlight, state_q == S_IDLE |-> tcnt == '0 && wcnt == '0 && icnt == '0)

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q   <= S_IDLE;
      twr_q     <= '0;
      trd_q     <= '0;
      ci_q      <= '0;
      cr_q      <= '0;
      bad_q     <= 1'b0;
      chk_q     <= 1'b0;
      chk_bad_q <= 1'b0;
      iwr_q     <= '0;
      ird_q     <= '0;
      ifly_q    <= '0;
      e_q       <= '0;
      j_q       <= '0;
      k_q       <= '0;
      lp_q      <= '0;
      wrow_q    <= '0;
      lfly_q    <= '0;
      wwr_q     <= '0;
      wrd_q     <= '0;
    end else begin
      state_q   <= state_d;
      twr_q     <= twr_q + (OW+1)'(accept);
      trd_q     <= trd_q + (OW+1)'(hbm_rsp_valid_i);
      ci_q      <= ci_d;
      cr_q      <= cr_d;
      bad_q     <= bad_d;
      chk_q     <= last_chk;
      chk_bad_q <= last_chk && bad_d;
      iwr_q     <= iwr_q + (IW+1)'(hbm_rsp_valid_i && rsp_tag.kind == K_IDX);
      ird_q     <= ird_q + (IW+1)'(ipop);
      ifly_q    <= ifly_d;
      e_q       <= e_d;
      j_q       <= j_d;
      k_q       <= k_d;
      lp_q      <= lp_d;
      wrow_q    <= wrow_d;
      lfly_q    <= lfly_d;
      wwr_q     <= wwr_q + (WBW+1)'(wpush);
      wrd_q     <= wrd_q + (WBW+1)'(wpop);
    end
  end
endmodule
