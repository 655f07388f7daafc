// hbm_arb: two requesters (0: a TensorCore's DMA, 1: the SparseCore) sharing one HBM port
// (rtl/hbm.sv's protocol on every side: valid/ready requests {we, addr, wdata}, in-order
// responses without back-pressure).
//
// Contract
// - Round robin between the two when both are valid (the one not granted last wins), so neither
//   starves; out of reset requester 1 wins the first conflict (as if requester 0 had been granted
//   last). A lone requester gets the HBM's ready as it is. ready_o[i] = the HBM is ready and the
//   other requester does not win this cycle: it never depends on valid_i[i] (the HBM port's rule),
//   and with requester 1 idle requester 0 sees exactly the HBM (single-core timing unchanged).
// - Responses go back in acceptance order: a FIFO of the accepted requests' sources (DEPTH >
//   LATENCY entries: the HBM holds at most LATENCY in flight) routes each response to its
//   requester in the cycle it arrives; no latency is added.
//
// Latency: none (combinational grant and routing).
// Verification: sim_top never lets both request at once (doc/sparsecore.md, "Interlocks"); the
// contention is tested in the unit env tb/hbm_arb (tests/rtl/test_hbm_arb.py).
module hbm_arb #(
  parameter int unsigned N       = 4,
  parameter int unsigned LATENCY = 100,
  localparam int unsigned L      = N * N,
  localparam int unsigned DEPTH  = 1 << $clog2(LATENCY + 1),
  localparam int unsigned DW     = $clog2(DEPTH)
) (
  input  logic                      clk_i,
  input  logic                      rst_ni,
  // requesters
  input  logic [1:0]                req_valid_i,
  output logic [1:0]                req_ready_o,
  input  logic [1:0]                req_we_i,
  input  logic [1:0][31:0]          req_addr_i,
  input  logic [1:0][L-1:0][31:0]   req_wdata_i,
  output logic [1:0]                rsp_valid_o,
  output logic                      rsp_we_o,      // shared: valid only with a rsp_valid_o bit
  output logic [L-1:0][31:0]        rsp_rdata_o,
  // the HBM
  output logic                      hbm_req_valid_o,
  input  logic                      hbm_req_ready_i,
  output logic                      hbm_req_we_o,
  output logic [31:0]               hbm_req_addr_o,
  output logic [L-1:0][31:0]        hbm_req_wdata_o,
  input  logic                      hbm_rsp_valid_i,
  input  logic                      hbm_rsp_we_i,
  input  logic [L-1:0][31:0]        hbm_rsp_rdata_i
);
  `include "assert.svh"

  logic last_q;  // the requester granted last
  logic win1;    // requester 1 wins this cycle
  logic grant;   // the requester whose request goes to the HBM
  assign win1  = req_valid_i[1] && (!req_valid_i[0] || !last_q);
  assign grant = win1;
  // a requester loses only to the other one holding the priority (granted less recently)
  assign req_ready_o[0] = hbm_req_ready_i && !(req_valid_i[1] && !last_q);
  assign req_ready_o[1] = hbm_req_ready_i && !(req_valid_i[0] && last_q);

  assign hbm_req_valid_o = req_valid_i[grant];
  assign hbm_req_we_o    = req_we_i[grant];
  assign hbm_req_addr_o  = req_addr_i[grant];
  assign hbm_req_wdata_o = req_wdata_i[grant];

  logic accept;
  assign accept = hbm_req_valid_o && hbm_req_ready_i;

  // the sources of the requests in flight, oldest first
  logic        src_q [DEPTH];
  logic [DW:0] wr_q, rd_q, cnt;
  logic        head;
  assign cnt  = wr_q - rd_q;
  assign head = src_q[rd_q[DW-1:0]];
  always_ff @(posedge clk_i) begin
    if (accept) src_q[wr_q[DW-1:0]] <= grant;
  end

  assign rsp_valid_o = {hbm_rsp_valid_i && head, hbm_rsp_valid_i && !head};
  assign rsp_we_o    = hbm_rsp_we_i;
  assign rsp_rdata_o = hbm_rsp_rdata_i;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      last_q <= 1'b0;
      wr_q   <= '0;
      rd_q   <= '0;
    end else begin
      if (accept) last_q <= grant;
      wr_q <= wr_q + (DW+1)'(accept);
      rd_q <= rd_q + (DW+1)'(hbm_rsp_valid_i);
    end
  end

  `ASSERT(OneAccepted, !(req_valid_i[0] && req_ready_o[0] && req_valid_i[1] && req_ready_o[1]))
  `ASSERT(RspHasSource, hbm_rsp_valid_i |-> cnt != '0)
  `ASSERT(SourcesBounded, 32'(cnt) <= DEPTH)
  `ASSERT_KNOWN(ValidKnown, {req_valid_i, hbm_rsp_valid_i})
endmodule
