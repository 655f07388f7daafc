// noc_sc_ep: the SparseCore's endpoint on the chip's two rings (doc/chip.md, node 3). It turns
// rtl/sparsecore.sv's HBM requests into request flits to the HBM node and passes the HBM's
// response flits back to it. The SparseCore is a pure HBM client: it sends no signals and nothing
// but the HBM's answers may reach it.
//
// Packets (one flit each; payload PW = N*N*32, one tile), as noc_core_ep.sv's:
// - request ring, tag = {kind[1:0], arg[31:0]}: K_READ (arg = HBM tile, payload unused) or
//   K_WRITE (arg = HBM tile, payload = the tile), always to node HBM_NODE.
// - response ring, tag = {we}: the HBM's answer (we: a write's acknowledge, else the read's tile),
//   in request order (one source, one destination: the ring keeps it).
//
// Contract
// - The SparseCore's request goes out as a flit in the cycle it is offered when the ring's
//   injection queue has room (hbm_req_ready_o = req_inj_ready_i: never depends on a valid, the HBM
//   port's rule); nothing is dropped (the ring moves flits only onto credits).
// - Both eject ports always take their flit (ready = 1): the SparseCore takes every response in the
//   cycle it is ejected (its tag FIFO books an entry per request and it never refuses one), so this
//   endpoint never blocks a ring (doc/noc.md's consumption assumption).
// - A request-ring flit reaching this node (nobody sends to the SparseCore), a response from a node
//   that is not the HBM, or a response with no request in flight raises err_o (sticky; assertions).
// Latency: none of its own (combinational between the SparseCore's port and the rings).
module noc_sc_ep #(
  parameter int unsigned N        = 4,
  parameter int unsigned ID_W     = 4,
  parameter int unsigned HBM_NODE = 2,
  // ASSERT_WELLFORMED gates only the assertions a malformed packet fires (NothingToSparseCore,
  // AnswersFromHbm, AnswerHasRequest).
  // The chip keeps them on (1); the endpoints' unit env (tb/noc_ep) builds with 0 to inject such
  // packets and watch the sticky err_o path, which no legal chip input reaches. The other
  // assertions stay on in every build.
  parameter bit          ASSERT_WELLFORMED = 1'b1,
  localparam int unsigned L       = N * N,
  localparam int unsigned PW      = L * 32,
  localparam int unsigned TAG_W   = 34,  // request ring: {kind, arg}
  localparam int unsigned RTAG_W  = 1,   // response ring: {we}
  localparam int unsigned CNT_W   = 16   // requests in flight (the SparseCore keeps < 2^CNT_W)
) (
  input  logic               clk_i,
  input  logic               rst_ni,
  // the SparseCore's HBM port (rtl/hbm.sv's protocol)
  input  logic               hbm_req_valid_i,
  output logic               hbm_req_ready_o,
  input  logic               hbm_req_we_i,
  input  logic [31:0]        hbm_req_addr_i,
  input  logic [L-1:0][31:0] hbm_req_wdata_i,
  output logic               hbm_rsp_valid_o,
  output logic               hbm_rsp_we_o,
  output logic [L-1:0][31:0] hbm_rsp_rdata_o,
  // request ring: inject and eject
  output logic               req_inj_valid_o,
  input  logic               req_inj_ready_i,
  output logic [ID_W-1:0]    req_inj_dst_o,
  output logic [TAG_W-1:0]   req_inj_tag_o,
  output logic [PW-1:0]      req_inj_data_o,
  input  logic               req_ej_valid_i,
  output logic               req_ej_ready_o,
  // response ring: eject
  input  logic               rsp_ej_valid_i,
  output logic               rsp_ej_ready_o,
  input  logic [ID_W-1:0]    rsp_ej_src_i,
  input  logic [RTAG_W-1:0]  rsp_ej_tag_i,
  input  logic [PW-1:0]      rsp_ej_data_i,
  output logic               err_o
);
  localparam logic [1:0] K_READ = 2'd0, K_WRITE = 2'd1;

  // inject: every request to the HBM node
  assign hbm_req_ready_o = req_inj_ready_i;
  assign req_inj_valid_o = hbm_req_valid_i;
  assign req_inj_dst_o   = ID_W'(HBM_NODE);
  assign req_inj_tag_o   = {hbm_req_we_i ? K_WRITE : K_READ, hbm_req_addr_i};
  assign req_inj_data_o  = hbm_req_we_i ? PW'(hbm_req_wdata_i) : '0;

  // eject: responses to the SparseCore, always taken; the request ring brings nothing here
  assign rsp_ej_ready_o  = 1'b1;
  assign req_ej_ready_o  = 1'b1;
  assign hbm_rsp_valid_o = rsp_ej_valid_i;
  assign hbm_rsp_we_o    = rsp_ej_valid_i && rsp_ej_tag_i[0];
  assign hbm_rsp_rdata_o = rsp_ej_data_i;

  // requests in flight: injected and not yet answered
  logic             sent, bad, err_q;
  logic [CNT_W-1:0] fly_q, fly_d;
  assign sent  = hbm_req_valid_i && req_inj_ready_i;
  assign fly_d = fly_q + CNT_W'(sent) - CNT_W'(rsp_ej_valid_i);
  assign bad   = req_ej_valid_i || (rsp_ej_valid_i && (32'(rsp_ej_src_i) != HBM_NODE || fly_q == '0));
  assign err_o = err_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      fly_q <= '0;
      err_q <= 1'b0;
    end else begin
      fly_q <= fly_d;
      err_q <= err_q || bad;
    end
  end

  `include "assert.svh"
  if (ASSERT_WELLFORMED) begin : gen_wellformed
    `ASSERT(NothingToSparseCore, !req_ej_valid_i)
    `ASSERT(AnswersFromHbm, rsp_ej_valid_i |-> 32'(rsp_ej_src_i) == HBM_NODE)
    `ASSERT(AnswerHasRequest, rsp_ej_valid_i |-> fly_q != '0)
  end
  `ASSERT(FlightBounded, !(sent && !rsp_ej_valid_i && fly_q == '1))
endmodule
