// noc_core_ep: a TensorCore's endpoint on the chip's two rings (doc/chip.md). It turns the core's
// HBM port into request flits to the HBM node and the core's signal port into signal flits to a
// core, and passes the HBM's response flits and other cores' signals back.
//
// Packets (one flit each; payload PW = N*N*32, one tile):
// - request ring, tag = {kind[1:0], arg[31:0]}: kind K_READ (arg = HBM tile, payload unused),
//   K_WRITE (arg = HBM tile, payload = the tile), K_SIG (arg = flag, to core node sig_core_i).
// - response ring, tag = {we}: the HBM's answer to this core (we: a write's acknowledge, else the
//   read's tile in the payload), in request order (one source, one destination: the ring keeps it).
//
// Contract
// - The core's HBM request goes out as a flit in the cycle it is offered when the ring's injection
//   queue has room (hbm_req_ready_o = req_inj_ready_i: never depends on a valid); a signal only
//   when no HBM request is offered (SIG.SEND waits for an idle DMA anyway) and the queue has room.
// - Both eject ports always take their flit (ready = 1), so this endpoint never blocks a ring: the
//   consumption assumption of doc/noc.md holds. A response reaches the core in the cycle it is
//   ejected (the DMA engine takes every response); a signal flit pulses sig_rx_valid_o.
// - A request-ring flit that is not a signal, or one from a node that is no core, raises err_o
//   (sticky; an assertion): only cores send to cores.
// Latency: none of its own (combinational between the core's ports and the rings).
module noc_core_ep #(
  parameter int unsigned N        = 4,
  parameter int unsigned ID_W     = 4,
  parameter int unsigned CORES    = 2,
  parameter int unsigned HBM_NODE = 2,
  parameter int unsigned FLAG_W   = 3,
  // ASSERT_WELLFORMED gates only the assertions a malformed packet fires (OnlySignalsToCores).
  // The chip keeps them on (1); the endpoints' unit env (tb/noc_ep) builds with 0 to inject such
  // packets and watch the sticky err_o path, which no legal chip input reaches. The other
  // assertions stay on in every build.
  parameter bit          ASSERT_WELLFORMED = 1'b1,
  localparam int unsigned L       = N * N,
  localparam int unsigned PW      = L * 32,
  localparam int unsigned TAG_W   = 34,  // request ring: {kind, arg}
  localparam int unsigned RTAG_W  = 1    // response ring: {we}
) (
  input  logic                   clk_i,
  input  logic                   rst_ni,
  // the core's HBM port
  input  logic                   hbm_req_valid_i,
  output logic                   hbm_req_ready_o,
  input  logic                   hbm_req_we_i,
  input  logic [31:0]            hbm_req_addr_i,
  input  logic [L-1:0][31:0]     hbm_req_wdata_i,
  output logic                   hbm_rsp_valid_o,
  output logic                   hbm_rsp_we_o,
  output logic [L-1:0][31:0]     hbm_rsp_rdata_o,
  // the core's signal port
  input  logic                   sig_valid_i,
  input  logic [3:0]             sig_core_i,
  input  logic [FLAG_W-1:0]      sig_flag_i,
  output logic                   sig_ready_o,
  output logic                   sig_rx_valid_o,
  output logic [FLAG_W-1:0]      sig_rx_flag_o,
  // request ring: inject and eject
  output logic                   req_inj_valid_o,
  input  logic                   req_inj_ready_i,
  output logic [ID_W-1:0]        req_inj_dst_o,
  output logic [TAG_W-1:0]       req_inj_tag_o,
  output logic [PW-1:0]          req_inj_data_o,
  input  logic                   req_ej_valid_i,
  output logic                   req_ej_ready_o,
  input  logic [ID_W-1:0]        req_ej_src_i,
  input  logic [TAG_W-1:0]       req_ej_tag_i,
  // response ring: eject
  input  logic                   rsp_ej_valid_i,
  output logic                   rsp_ej_ready_o,
  input  logic [RTAG_W-1:0]      rsp_ej_tag_i,
  input  logic [PW-1:0]          rsp_ej_data_i,
  output logic                   err_o
);
  localparam logic [1:0] K_READ = 2'd0, K_WRITE = 2'd1, K_SIG = 2'd2;

  // inject: the HBM request first, else a signal
  assign hbm_req_ready_o = req_inj_ready_i;
  assign sig_ready_o     = req_inj_ready_i && !hbm_req_valid_i;
  assign req_inj_valid_o = hbm_req_valid_i || sig_valid_i;
  assign req_inj_dst_o   = hbm_req_valid_i ? ID_W'(HBM_NODE) : ID_W'(sig_core_i);
  assign req_inj_tag_o   = hbm_req_valid_i ? {hbm_req_we_i ? K_WRITE : K_READ, hbm_req_addr_i}
                                           : {K_SIG, 32'(sig_flag_i)};
  assign req_inj_data_o  = hbm_req_valid_i && hbm_req_we_i ? PW'(hbm_req_wdata_i) : '0;

  // eject: responses to the core, signals to its flags; both always taken
  assign rsp_ej_ready_o  = 1'b1;
  assign hbm_rsp_valid_o = rsp_ej_valid_i;
  assign hbm_rsp_we_o    = rsp_ej_valid_i && rsp_ej_tag_i[0];
  assign hbm_rsp_rdata_o = rsp_ej_data_i;
  assign req_ej_ready_o  = 1'b1;

  logic bad, err_q;
  assign bad            = req_ej_valid_i && (req_ej_tag_i[33:32] != K_SIG || 32'(req_ej_src_i) >= CORES);
  assign sig_rx_valid_o = req_ej_valid_i && !bad;
  assign sig_rx_flag_o  = FLAG_W'(req_ej_tag_i[31:0]);
  assign err_o          = err_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) err_q <= 1'b0;
    else         err_q <= err_q || bad;
  end

  `include "assert.svh"
  if (ASSERT_WELLFORMED) begin : gen_wellformed
    `ASSERT(OnlySignalsToCores, !bad)
  end
  `ASSERT(SignalsWaitForRequests, sig_valid_i |-> sig_ready_o)  // the SXU offers only when ready
  `ASSERT(SignalToACore, sig_valid_i |-> 32'(sig_core_i) < CORES)
endmodule
