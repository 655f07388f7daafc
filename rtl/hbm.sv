// hbm: the HBM model of the simulation (doc/hbm.md): TILES tiles of N x N 32-bit lanes behind one
// request/response port. Its timing is RTL; its contents live in a sparse C++ store reached
// through DPI-C (rtl/sim/hbm_store.cpp), so a run pays only for the tiles it touches.
//
// Contract
// - Request: req_valid_i/req_ready_o handshake carrying {we, addr, wdata}; a request is accepted
//   in a cycle with req_valid_i && req_ready_o. req_ready_o depends only on the bandwidth state
//   (never on req_valid_i), so a requester may look at it in the cycle it decides.
// - Effect order: a request takes effect at acceptance (a read samples the store, a write
//   updates it), so reads and writes take effect in acceptance order: a read accepted after a
//   write to the same tile returns the new data.
// - Response: every accepted request gets exactly one response, in acceptance order: rsp_valid_o
//   for one cycle, rsp_we_o (1: the acknowledge of a write, 0: a read with rsp_rdata_o). There is
//   no response ready: the requester must take a response in the cycle it arrives (the DMA
//   engine sizes its tag FIFO to its outstanding requests, so it always can).
// - An address outside [0, TILES) reads zero, writes nothing and raises err_o the cycle after
//   acceptance (the SXU traps such a DMA before it issues: an assertion of tensorcore.sv).
//
// Latency and bandwidth
// - A request accepted in cycle t responds in cycle t + LATENCY.
// - Bandwidth BW_NUM / BW_DEN tiles a cycle (<= 1) by a token bucket: it is full after reset
//   (CAP = BW_DEN + BW_NUM - 1 tokens), gains BW_NUM a cycle up to CAP, and a request costs
//   BW_DEN; ready while it holds at least BW_DEN. A requester that always has a request, starting
//   on a full bucket (after reset, or after ceil(BW_DEN / BW_NUM) idle cycles), has its k-th
//   request (from 0) accepted B(k) = floor(k * BW_DEN / BW_NUM) cycles after the first: one a
//   cycle at 1/1, one every BW_DEN cycles at 1/BW_DEN, never more than the bandwidth over a window.
// - So T reads accepted that way respond at LATENCY + B(k) cycles after the first's acceptance.
//
// Structure: the bandwidth bucket; the acceptance stage (DPI-C read or write); the latency FIFO
// (DEPTH >= LATENCY entries of {due cycle, we, data}: at most LATENCY requests are in flight, one
// accepted a cycle, each leaving exactly LATENCY cycles later, so it never overflows).
module hbm #(
  parameter int unsigned N         = 4,
  parameter int unsigned TILES     = 1 << 20,
  parameter int unsigned LATENCY   = 100,
  parameter int unsigned BW_NUM    = 1,
  parameter int unsigned BW_DEN    = 1,
  localparam int unsigned L        = N * N,
  localparam int unsigned DEPTH    = 1 << $clog2(LATENCY + 1),
  localparam int unsigned PW       = $clog2(DEPTH),
  localparam int unsigned BW       = $clog2(3 * BW_DEN + 1)
) (
  input  logic                  clk_i,
  input  logic                  rst_ni,
  // request
  input  logic                  req_valid_i,
  output logic                  req_ready_o,
  input  logic                  req_we_i,
  input  logic [31:0]           req_addr_i,
  input  logic [L-1:0][31:0]    req_wdata_i,
  // response (in acceptance order, no back-pressure)
  output logic                  rsp_valid_o,
  output logic                  rsp_we_o,
  output logic [L-1:0][31:0]    rsp_rdata_o,
  output logic                  err_o
);
  localparam int unsigned DPI_BITS = 8192;  // 16 x 16 lanes: the widest tile (N <= 16)

  import "DPI-C" function int tt_hbm_read(input longint addr, output bit [DPI_BITS-1:0] data);
  import "DPI-C" function int tt_hbm_write(input longint addr, input bit [DPI_BITS-1:0] data);

  `include "assert.svh"
  `ASSERT_INIT(TileFitsDpi, L * 32 <= DPI_BITS)
  `ASSERT_INIT(BandwidthAtMostOne, BW_NUM >= 1 && BW_NUM <= BW_DEN)
  `ASSERT_INIT(LatencyPositive, LATENCY >= 1)

  typedef struct packed {
    logic [31:0]        due;   // the cycle the response goes out
    logic               we;
    logic [L-1:0][31:0] data;  // a read's data (sampled at acceptance)
  } entry_t;

  // ---------------------------------------------------------------------------------------------
  // bandwidth: the token bucket
  logic [BW-1:0] tok_q, tok_d;
  logic          accept;
  assign req_ready_o = 32'(tok_q) >= BW_DEN;
  assign accept      = req_valid_i && req_ready_o;
  always_comb begin
    tok_d = tok_q + BW'(BW_NUM) - (accept ? BW'(BW_DEN) : '0);
    if (32'(tok_d) > BW_DEN + BW_NUM - 1) tok_d = BW'(BW_DEN + BW_NUM - 1);
  end

  // ---------------------------------------------------------------------------------------------
  // acceptance: the store is read or written at the clock edge that accepts the request (so the
  // call sees the settled request and runs once; acceptance order is effect order). The one
  // exception to "always_ff holds only x_q <= x_d": a DPI-C side effect must happen at the edge.
  logic [31:0] now_q;
  logic        in_range, err_q;
  assign in_range = req_addr_i < 32'(TILES);

  // ---------------------------------------------------------------------------------------------
  // latency: the FIFO of accepted requests, each leaving at its due cycle
  entry_t          fifo_q [DEPTH];
  logic [PW:0]     wr_q, rd_q, cnt;
  logic            head_due;
  assign cnt      = wr_q - rd_q;
  assign head_due = cnt != '0 && fifo_q[rd_q[PW-1:0]].due == now_q;

  assign rsp_valid_o = head_due;
  assign rsp_we_o    = head_due && fifo_q[rd_q[PW-1:0]].we;
  assign rsp_rdata_o = head_due ? fifo_q[rd_q[PW-1:0]].data : '0;
  assign err_o       = err_q;

  always_ff @(posedge clk_i) begin
    if (rst_ni && accept) begin
      bit [DPI_BITS-1:0] buf_v;
      int                ok;
      buf_v = '0;
      ok    = 1;
      if (in_range && req_we_i) begin
        buf_v[L*32-1:0] = req_wdata_i;
        ok = tt_hbm_write(longint'(req_addr_i), buf_v);
      end else if (in_range) begin
        ok = tt_hbm_read(longint'(req_addr_i), buf_v);
      end
      `ASSERT_I(StoreAcceptsInRange, ok != 0)
      fifo_q[wr_q[PW-1:0]] <= '{due: now_q + 32'(LATENCY), we: req_we_i, data: req_we_i ? '0 : buf_v[L*32-1:0]};
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      tok_q <= BW'(BW_DEN + BW_NUM - 1);
      now_q <= '0;
      wr_q  <= '0;
      rd_q  <= '0;
      err_q <= 1'b0;
    end else begin
      tok_q <= tok_d;
      now_q <= now_q + 32'd1;
      wr_q  <= wr_q + (PW+1)'(accept);
      rd_q  <= rd_q + (PW+1)'(head_due);
      err_q <= accept && !in_range;
    end
  end

  // at most LATENCY requests in flight (one accepted a cycle, each leaving LATENCY cycles later)
  `ASSERT(FifoNeverOverflows, 32'(cnt) <= LATENCY)
  // the head is never overdue: responses leave exactly LATENCY cycles after acceptance
  `ASSERT(HeadNeverLate, cnt != '0 |-> (fifo_q[rd_q[PW-1:0]].due - now_q) <= 32'(LATENCY))
  `ASSERT_KNOWN(ReqKnown, req_valid_i)
  `ASSERT(ReqFieldsKnown, req_valid_i |-> !$isunknown({req_we_i, req_addr_i}))
  `ASSERT_KNOWN(RspKnown, {rsp_valid_o, rsp_we_o, req_ready_o, err_o})
endmodule
