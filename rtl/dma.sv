// dma: the DMA engine of the TensorCore (doc/hbm.md): copies between HBM and VMEM in the
// background, commands in issue order.
//
// Contract
// - Commands (cmd_valid_i && cmd_ready_o accepts one; cmd_ready_o = the queue has room, QDEPTH
//   entries): DMA.IN (out = 0) copies HBM -> VMEM, DMA.OUT (out = 1) VMEM -> HBM; `rows` rows of
//   `t` tiles, row r, tile k < t: VMEM vaddr + r*vstride + k <-> HBM haddr + r*hstride + k
//   (hstride signed), in increasing r then k. The SXU checked every address and interlocks every
//   other VMEM access and every conflicting DMA against the tiles in flight (rtl/sxu.sv), so the
//   engine needs no ordering between its own commands beyond request order: its HBM requests
//   go out in command order (a direction change drains the write buffer first).
// - VMEM ports: the write port (vm_req_o, vm_we_o = 1) takes a tile returned by HBM in the cycle
//   it arrives; the read port (vr_req_o) reads a DMA.OUT tile, its data the next cycle
//   (vr_rdata_i). The two are independent, so a DMA.OUT walks while a DMA.IN's responses return.
// - HBM port (rtl/hbm.sv): a valid/ready request {we, addr, wdata}, in-order responses without
//   back-pressure (rsp_valid_i, rsp_we_i: a write's acknowledge). Every request books an entry of
//   the tag FIFO (OUTS >= LATENCY + 2 entries: the destination tile of a read), so every response
//   finds its tag; the engine never refuses a response and the HBM never waits on the engine, so
//   they cannot deadlock.
// - idle_o: no command queued or walking, nothing buffered, no request in flight (every write
//   acknowledged). tile_o: an HBM request was accepted this cycle (the dma_tiles counter).
//   done_o: the oldest command completed this cycle (its last tile written to VMEM, or its last
//   HBM write acknowledged); commands complete in command order (the SXU releases its tiles).
//
// Latency (an idle engine, the HBM bucket full; formulas of rtl/hbm.sv, with
// B(k) = floor(k * BW_DEN / BW_NUM)): a command accepted in cycle s reaches the walker at s + 1;
// - DMA.IN of n tiles: the k-th HBM read is accepted at s + 2 + B(k), its tile is written to VMEM
//   at s + 2 + B(k) + LATENCY; the engine is idle from s + 3 + LATENCY + B(n-1).
// - DMA.OUT of n tiles: VMEM read k at s + 2 + k (at most two tiles ahead of the HBM), the k-th
//   HBM write accepted at s + 4 + B(k); idle from s + 5 + LATENCY + B(n-1).
// So a long copy moves BW_NUM / BW_DEN tiles a cycle (one a cycle at the default bandwidth).
//
// Structure: the command queue; the walker (the current command's row and tile counters and
// addresses, one tile a cycle); the DMA.OUT read stage and its two-entry write buffer; the HBM
// request mux; the tag FIFO and the response stage (VMEM writes of DMA.IN).
module dma #(
  parameter int unsigned N           = 4,
  parameter int unsigned QDEPTH      = tinytpu_pkg::DMA_QDEPTH,
  parameter int unsigned HBM_LATENCY = 100,
  localparam int unsigned L          = N * N,
  localparam int unsigned QW         = $clog2(QDEPTH),
  localparam int unsigned OUTS       = 1 << $clog2(HBM_LATENCY + 2),
  localparam int unsigned OW         = $clog2(OUTS)
) (
  input  logic                  clk_i,
  input  logic                  rst_ni,
  // commands
  input  logic                  cmd_valid_i,
  output logic                  cmd_ready_o,
  input  logic                  cmd_out_i,      // 1: DMA.OUT (VMEM -> HBM), 0: DMA.IN
  input  logic [31:0]           cmd_vaddr_i,
  input  logic [31:0]           cmd_haddr_i,
  input  logic [7:0]            cmd_t_i,        // tiles per row, 1..255
  input  logic [15:0]           cmd_rows_i,     // 1..65535
  input  logic [31:0]           cmd_hstride_i,  // signed
  input  logic [15:0]           cmd_vstride_i,
  output logic                  idle_o,
  output logic                  tile_o,
  output logic                  done_o,         // the oldest command completed (its last response)
  // VMEM DMA port
  output logic                  vm_req_o,
  output logic                  vm_we_o,
  output logic [31:0]           vm_addr_o,
  output logic [L-1:0][31:0]    vm_wdata_o,
  // VMEM DMA read port (DMA.OUT)
  output logic                  vr_req_o,
  output logic [31:0]           vr_addr_o,
  input  logic [L-1:0][31:0]    vr_rdata_i,
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
  `ASSERT_INIT(QDepthPow2, QDEPTH >= 4 && (QDEPTH & (QDEPTH - 1)) == 0)

  typedef struct packed {
    logic        out;
    logic [31:0] vaddr;
    logic [31:0] haddr;
    logic [7:0]  t;
    logic [15:0] rows;
    logic [31:0] hstride;
    logic [15:0] vstride;
  } cmd_t;

  typedef struct packed {
    logic        last;   // the command's last tile
    logic        we;     // the acknowledge of a write (DMA.OUT)
    logic [31:0] vaddr;  // a read's VMEM destination
  } tag_t;

  typedef struct packed {
    logic               last;   // the command's last tile
    logic [31:0]        haddr;
    logic [L-1:0][31:0] data;
  } wbuf_t;

  // ---------------------------------------------------------------------------------------------
  // command queue
  cmd_t        q_q [QDEPTH];
  logic [QW:0] qwr_q, qrd_q, qcnt;
  logic        q_push, q_pop, q_empty;
  cmd_t        cmd_in;
  assign qcnt        = qwr_q - qrd_q;
  assign q_empty     = qcnt == '0;
  assign cmd_ready_o = 32'(qcnt) < QDEPTH;
  assign q_push      = cmd_valid_i && cmd_ready_o;
  assign cmd_in      = '{out: cmd_out_i, vaddr: cmd_vaddr_i, haddr: cmd_haddr_i, t: cmd_t_i, rows: cmd_rows_i,
                         hstride: cmd_hstride_i, vstride: cmd_vstride_i};

  always_ff @(posedge clk_i) begin
    if (q_push) q_q[qwr_q[QW-1:0]] <= cmd_in;
  end

  `ASSERT(QueueNoOverflow, cmd_valid_i |-> cmd_ready_o)  // the SXU holds the issue while full
  `ASSERT(QueueNoUnderflow, q_pop |-> !q_empty)
  `ASSERT(CmdShapeLegal, cmd_valid_i |-> cmd_t_i != '0 && cmd_rows_i != '0)
  `ASSERT_KNOWN(CmdValidKnown, cmd_valid_i)

  // ---------------------------------------------------------------------------------------------
  // walker: the current command, one tile a cycle (a step), rows back to back
  cmd_t        cur_q, cur_d;
  logic        cur_valid_q, cur_valid_d;
  logic [7:0]  k_q, k_d;       // tile within the row
  logic [15:0] r_q, r_d;       // row
  logic [31:0] vrow_q, vrow_d, hrow_q, hrow_d;
  logic [31:0] step_v, step_h;
  logic        step, last_step;
  assign step_v    = vrow_q + 32'(k_q);
  assign step_h    = hrow_q + 32'(k_q);
  assign last_step = step && k_q == cur_q.t - 8'd1 && r_q == cur_q.rows - 16'd1;
  assign q_pop     = (!cur_valid_q || last_step) && !q_empty;

  always_comb begin
    cur_d       = cur_q;
    cur_valid_d = cur_valid_q && !last_step;
    k_d         = k_q;
    r_d         = r_q;
    vrow_d      = vrow_q;
    hrow_d      = hrow_q;
    if (step) begin
      if (k_q == cur_q.t - 8'd1) begin
        k_d    = '0;
        r_d    = r_q + 16'd1;
        vrow_d = vrow_q + 32'(cur_q.vstride);
        hrow_d = hrow_q + cur_q.hstride;
      end else begin
        k_d = k_q + 8'd1;
      end
    end
    if (q_pop) begin
      cur_d       = q_q[qrd_q[QW-1:0]];
      cur_valid_d = 1'b1;
      k_d         = '0;
      r_d         = '0;
      vrow_d      = cur_d.vaddr;
      hrow_d      = cur_d.haddr;
    end
  end

  // ---------------------------------------------------------------------------------------------
  // DMA.OUT: the VMEM read (data the next cycle) and the two-entry write buffer
  wbuf_t       wb_q [2];
  logic        wb_rd_q, wb_wr_q;     // buffer pointers (one bit: two entries)
  logic [1:0]  wb_cnt_q, wb_cnt_d;
  logic        pend_q;               // a VMEM read whose data arrives this cycle
  logic        pend_last_q;          // ... of the command's last tile
  logic [31:0] pend_h_q;
  logic        rsp_rd, out_step, wb_pop;
  assign rsp_rd   = hbm_rsp_valid_i && !hbm_rsp_we_i;  // a returning read: a VMEM write now
  assign out_step = cur_valid_q && cur_q.out && (32'(wb_cnt_q) + 32'(pend_q) - 32'(wb_pop)) < 32'd2;

  always_ff @(posedge clk_i) begin
    if (pend_q) wb_q[wb_wr_q] <= '{last: pend_last_q, haddr: pend_h_q, data: vr_rdata_i};
  end
  assign wb_cnt_d = wb_cnt_q + 2'(pend_q) - 2'(wb_pop);

  // ---------------------------------------------------------------------------------------------
  // HBM requests: the write buffer's head, else a DMA.IN read (only once the buffer is drained, so
  // requests leave in command order); each books a tag
  tag_t        tag_q [OUTS];
  logic [OW:0] twr_q, trd_q, tcnt;
  logic        tag_room, in_step, accept;
  assign tcnt     = twr_q - trd_q;
  assign tag_room = 32'(tcnt) < OUTS;
  assign in_step  = cur_valid_q && !cur_q.out && wb_cnt_q == '0 && !pend_q && tag_room && hbm_req_ready_i;

  always_comb begin
    hbm_req_valid_o = 1'b0;
    hbm_req_we_o    = 1'b0;
    hbm_req_addr_o  = '0;
    hbm_req_wdata_o = '0;
    if (wb_cnt_q != '0) begin
      hbm_req_valid_o = tag_room;
      hbm_req_we_o    = 1'b1;
      hbm_req_addr_o  = wb_q[wb_rd_q].haddr;
      hbm_req_wdata_o = wb_q[wb_rd_q].data;
    end else if (cur_valid_q && !cur_q.out && !pend_q) begin
      hbm_req_valid_o = tag_room;
      hbm_req_addr_o  = step_h;
    end
  end
  assign accept = hbm_req_valid_o && hbm_req_ready_i;
  assign wb_pop = accept && hbm_req_we_o;
  assign step   = out_step || in_step;
  assign tile_o = accept;

  always_ff @(posedge clk_i) begin
    if (accept) tag_q[twr_q[OW-1:0]] <= '{last: hbm_req_we_o ? wb_q[wb_rd_q].last : last_step, we: hbm_req_we_o, vaddr: step_v};
  end

  // ---------------------------------------------------------------------------------------------
  // responses: a read's tile goes to its VMEM tile now; an acknowledge only frees its tag
  tag_t rsp_tag;
  assign rsp_tag = tag_q[trd_q[OW-1:0]];
  assign done_o  = hbm_rsp_valid_i && rsp_tag.last;

  always_comb begin
    vm_req_o   = 1'b0;
    vm_we_o    = 1'b0;
    vm_addr_o  = '0;
    vm_wdata_o = '0;
    if (rsp_rd) begin
      vm_req_o   = 1'b1;
      vm_we_o    = 1'b1;
      vm_addr_o  = rsp_tag.vaddr;
      vm_wdata_o = hbm_rsp_rdata_i;
    end
  end
  assign vr_req_o  = out_step;
  assign vr_addr_o = step_v;

  `ASSERT(RspHasTag, hbm_rsp_valid_i |-> tcnt != '0)
  `ASSERT(RspKindMatchesTag, hbm_rsp_valid_i |-> hbm_rsp_we_i == rsp_tag.we)
  `ASSERT(TagNoOverflow, accept |-> tag_room)
  // a DMA.OUT never reads the tile a DMA.IN response writes in the same cycle (the SXU holds a
  // DMA.OUT whose tiles a DMA.IN still writes)
  `ASSERT_NEVER(ReadOfTileBeingWritten, rsp_rd && out_step && 32'(rsp_tag.vaddr) == 32'(step_v))
  `ASSERT(BufferNoOverflow, 32'(wb_cnt_q) + 32'(pend_q) <= 2)
  `ASSERT(InStepAccepted, in_step |-> accept && !hbm_req_we_o)
  `ASSERT_KNOWN(RspValidKnown, {hbm_rsp_valid_i, hbm_req_ready_i})
  `ASSERT_KNOWN(OutKnown, {idle_o, tile_o, vm_req_o, hbm_req_valid_o})

  // ---------------------------------------------------------------------------------------------
  // state
  assign idle_o = q_empty && !cur_valid_q && wb_cnt_q == '0 && !pend_q && tcnt == '0;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      qwr_q       <= '0;
      qrd_q       <= '0;
      cur_q       <= '0;
      cur_valid_q <= 1'b0;
      k_q         <= '0;
      r_q         <= '0;
      vrow_q      <= '0;
      hrow_q      <= '0;
      wb_rd_q     <= 1'b0;
      wb_wr_q     <= 1'b0;
      wb_cnt_q    <= '0;
      pend_q      <= 1'b0;
      pend_h_q    <= '0;
      pend_last_q <= 1'b0;
      twr_q       <= '0;
      trd_q       <= '0;
    end else begin
      qwr_q       <= qwr_q + (QW+1)'(q_push);
      qrd_q       <= qrd_q + (QW+1)'(q_pop);
      cur_q       <= cur_d;
      cur_valid_q <= cur_valid_d;
      k_q         <= k_d;
      r_q         <= r_d;
      vrow_q      <= vrow_d;
      hrow_q      <= hrow_d;
      wb_rd_q     <= wb_rd_q ^ wb_pop;
      wb_wr_q     <= wb_wr_q ^ pend_q;
      wb_cnt_q    <= wb_cnt_d;
      pend_q      <= out_step;
      pend_h_q    <= step_h;
      pend_last_q <= out_step && last_step;
      twr_q       <= twr_q + (OW+1)'(accept);
      trd_q       <= trd_q + (OW+1)'(hbm_rsp_valid_i);
    end
  end
endmodule
