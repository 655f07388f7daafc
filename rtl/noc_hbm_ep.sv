// noc_hbm_ep: the HBM controller's endpoint (doc/chip.md): request flits from the request ring
// into rtl/hbm.sv's port, its responses as flits on the response ring, back to the requester.
//
// Contract
// - A request flit (tag {kind, addr}: K_READ or K_WRITE, noc_core_ep.sv) is taken in the cycle the
//   HBM accepts it (req_ej_ready_o = the HBM's ready and a free entry), so it takes effect at the
//   HBM in request-ring arrival order: per core in that core's order.
// - Every accepted request books an entry of a DEPTH-entry buffer (DEPTH >= HBM_LATENCY + 4, a power
//   of two) that receives its response (rtl/hbm.sv answers in acceptance order, without
//   back-pressure, HBM_LATENCY cycles later) and holds it until the response ring takes it, to
//   node src, tag {we}. So this endpoint never needs its own response ring's inject port to take
//   a response, and takes a request only with room for its answer: the two rings cannot block
//   each other (doc/noc.md's consumption assumption, served by a second ring and this buffer).
// - A flit of kind K_SIG reaching the HBM is taken and dropped with err_o (sticky; an assertion):
//   signals go to cores only.
// Latency: request flit ejected and accepted in cycle t -> response flit offered at t +
// HBM_LATENCY + 1 (the buffer's registered write).
module noc_hbm_ep #(
  parameter int unsigned N           = 4,
  parameter int unsigned ID_W        = 4,
  parameter int unsigned HBM_LATENCY = 100,
  // ASSERT_WELLFORMED gates only the assertions a malformed packet fires (NoSignalToHbm).
  // The chip keeps them on (1); the endpoints' unit env (tb/noc_ep) builds with 0 to inject such
  // packets and watch the sticky err_o path, which no legal chip input reaches. The other
  // assertions stay on in every build.
  parameter bit          ASSERT_WELLFORMED = 1'b1,
  localparam int unsigned L          = N * N,
  localparam int unsigned PW         = L * 32,
  localparam int unsigned TAG_W      = 34,
  localparam int unsigned RTAG_W     = 1,
  localparam int unsigned DEPTH      = 1 << $clog2(HBM_LATENCY + 4),
  localparam int unsigned DW         = $clog2(DEPTH)
) (
  input  logic                   clk_i,
  input  logic                   rst_ni,
  // request ring: eject
  input  logic                   req_ej_valid_i,
  output logic                   req_ej_ready_o,
  input  logic [ID_W-1:0]        req_ej_src_i,
  input  logic [TAG_W-1:0]       req_ej_tag_i,
  input  logic [PW-1:0]          req_ej_data_i,
  // the HBM's port
  output logic                   hbm_req_valid_o,
  input  logic                   hbm_req_ready_i,
  output logic                   hbm_req_we_o,
  output logic [31:0]            hbm_req_addr_o,
  output logic [L-1:0][31:0]     hbm_req_wdata_o,
  input  logic                   hbm_rsp_valid_i,
  input  logic                   hbm_rsp_we_i,
  input  logic [L-1:0][31:0]     hbm_rsp_rdata_i,
  // response ring: inject
  output logic                   rsp_inj_valid_o,
  input  logic                   rsp_inj_ready_i,
  output logic [ID_W-1:0]        rsp_inj_dst_o,
  output logic [RTAG_W-1:0]      rsp_inj_tag_o,
  output logic [PW-1:0]          rsp_inj_data_o,
  output logic                   err_o
);
  localparam logic [1:0] K_WRITE = 2'd1, K_SIG = 2'd2;

  // the response buffer: entries booked at acceptance (wr), filled by the HBM's responses in
  // order (fill), sent in order (rd); wr - rd <= DEPTH
  logic [ID_W-1:0]    src_q  [DEPTH];
  logic               we_q   [DEPTH];
  logic [L-1:0][31:0] data_q [DEPTH];
  logic [DW:0]        wr_q, fill_q, rd_q;
  logic               room, is_sig, accept, send, err_q;

  assign room   = (wr_q - rd_q) < (DW+1)'(DEPTH);
  assign is_sig = req_ej_tag_i[33:32] == K_SIG;

  assign hbm_req_valid_o = req_ej_valid_i && !is_sig && room;
  assign hbm_req_we_o    = req_ej_tag_i[33:32] == K_WRITE;
  assign hbm_req_addr_o  = req_ej_tag_i[31:0];
  assign hbm_req_wdata_o = req_ej_data_i;
  assign req_ej_ready_o  = is_sig || (room && hbm_req_ready_i);
  assign accept          = hbm_req_valid_o && hbm_req_ready_i;

  assign rsp_inj_valid_o = rd_q != fill_q;
  assign rsp_inj_dst_o   = src_q[rd_q[DW-1:0]];
  assign rsp_inj_tag_o   = we_q[rd_q[DW-1:0]];
  assign rsp_inj_data_o  = data_q[rd_q[DW-1:0]];
  assign send            = rsp_inj_valid_o && rsp_inj_ready_i;
  assign err_o           = err_q;

  always_ff @(posedge clk_i) begin
    if (accept) src_q[wr_q[DW-1:0]] <= req_ej_src_i;
    if (hbm_rsp_valid_i) begin
      we_q[fill_q[DW-1:0]]   <= hbm_rsp_we_i;
      data_q[fill_q[DW-1:0]] <= hbm_rsp_rdata_i;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      wr_q   <= '0;
      fill_q <= '0;
      rd_q   <= '0;
      err_q  <= 1'b0;
    end else begin
      wr_q   <= wr_q + (DW+1)'(accept);
      fill_q <= fill_q + (DW+1)'(hbm_rsp_valid_i);
      rd_q   <= rd_q + (DW+1)'(send);
      err_q  <= err_q || (req_ej_valid_i && is_sig);
    end
  end

  `include "assert.svh"
  `ASSERT_INIT(BufferCoversLatency, DEPTH >= HBM_LATENCY + 1)
  `ASSERT(ResponseHasEntry, hbm_rsp_valid_i |-> fill_q != wr_q)
  if (ASSERT_WELLFORMED) begin : gen_wellformed
    `ASSERT(NoSignalToHbm, !(req_ej_valid_i && is_sig))
  end
  `ASSERT(BufferBounded, (wr_q - rd_q) <= (DW+1)'(DEPTH))
endmodule
