// noc_router: one stop of the NoC ring (rtl/noc.sv): the input buffers of the ring link that
// arrives here (one per virtual channel), the endpoint's injection queue, the arbiter of the ring
// link that leaves here, the credit counters of the downstream buffers, and the eject port.
//
// Contract (per router; the ring, the latency formula and the deadlock argument are in noc.sv)
// - Ring in: ring_i is a link_t {valid, vc, flit} from the last register of the upstream link; it
//   is always accepted (the upstream router sent it on a credit: there is a free slot), pushed
//   into the buffer of its VC. crd_o[v] returns one slot of VC v upstream (pulse per freed slot).
// - Ring out: ring_o is this cycle's winner of the outgoing link (valid = a flit is sent); it is
//   registered by the link in noc.sv. crd_i[v] are the downstream buffer's returned slots.
// - Inject: valid/ready. inj_ready_o depends only on the queue's occupancy (never on
//   inj_valid_i). The router stamps src = ID. A flit whose dst is not a node (dst >= NODES) is
//   accepted and refused: it never enters the queue, bad_dst_o rises and stays high until reset,
//   and (ASSERT_DST) the InjDstExists assertion fires. It is never dropped silently or circulated.
// - Eject: valid/ready, one flit a cycle. Once ej_valid_o is high it stays high with the same
//   flit until ej_ready_i takes it (the VC choice is held while refused).
//
// Arbitration of the outgoing link, three requesters: 0 = the head of VC0 going on, 1 = the head
// of VC1 going on, 2 = the injection queue's head. A requester is eligible when its output VC has a
// credit. Through traffic first (round robin between the two VCs), injection when no through flit
// is eligible: a ring whose flits keep moving stays busy (at saturation a fair share for injection
// costs link utilisation: upstream traffic backs up behind injected flits). Injection cannot
// starve: once its head has waited INJ_STARVE cycles it goes first, on the first credit of its
// output VC (VC0, or VC1 at the dateline router); the through flits of that VC count on the same
// credits, so none can overtake it. So an injection waits at most INJ_STARVE cycles plus the time
// its output VC needs to return one credit, which it does while the downstream drains. The eject
// port alternates between the VCs when both have a flit for this node.
//
// Output VC: a flit leaving the dateline router (ID = NODES-1, its link wraps to router 0) goes on
// VC1; any other flit keeps its VC; injected flits start on VC0 (VC1 at the dateline router).
module noc_router #(
  parameter int unsigned  NODES      = 4,
  parameter int unsigned  ID         = 0,
  parameter int unsigned  ID_W       = 4,
  parameter int unsigned  TAG_W      = 16,
  parameter int unsigned  PW         = 512,
  parameter int unsigned  DEPTH      = 6,
  parameter int unsigned  INJ_DEPTH  = 2,
  parameter int unsigned  INJ_STARVE = 8,
  parameter bit           ASSERT_DST = 1'b1,
  localparam int unsigned FW         = 2 * ID_W + TAG_W + PW,
  localparam int unsigned LW         = FW + 2,
  localparam int unsigned CW         = $clog2(DEPTH + 1),
  localparam int unsigned IW         = $clog2(INJ_DEPTH + 1),
  localparam int unsigned AGE_W      = $clog2(INJ_STARVE + 1)
) (
  input  logic             clk_i,
  input  logic             rst_ni,
  // ring
  input  logic [LW-1:0]    ring_i,
  output logic [1:0]       crd_o,
  output logic [LW-1:0]    ring_o,
  input  logic [1:0]       crd_i,
  // inject
  input  logic             inj_valid_i,
  output logic             inj_ready_o,
  input  logic [ID_W-1:0]  inj_dst_i,
  input  logic [TAG_W-1:0] inj_tag_i,
  input  logic [PW-1:0]    inj_data_i,
  // eject
  output logic             ej_valid_o,
  input  logic             ej_ready_i,
  output logic [FW-1:0]    ej_flit_o,
  // status
  output logic             bad_dst_o,   // sticky: a flit to a node that does not exist was refused
  output logic             send_o,      // a flit goes out on the ring link this cycle
  output logic             contend_o    // through traffic and injection both want the link
);
  `include "assert.svh"
  `ASSERT_INIT(IdInRange, ID < NODES && NODES >= 2 && NODES <= (1 << ID_W))
  `ASSERT_INIT(DepthPositive, DEPTH >= 1 && INJ_DEPTH >= 1 && INJ_STARVE >= 1)

  typedef struct packed {
    logic [ID_W-1:0]  dst;
    logic [ID_W-1:0]  src;
    logic [TAG_W-1:0] tag;
    logic [PW-1:0]    data;
  } flit_t;

  typedef struct packed {
    logic  valid;
    logic  vc;
    flit_t flit;
  } link_t;

  localparam bit         DATELINE = ID == NODES - 1;  // the outgoing link wraps to router 0
  localparam logic [ID_W-1:0] ME  = ID_W'(ID);
  localparam int unsigned REQS    = 3;                // VC0 on, VC1 on, injection

  link_t in_l, out_l;
  assign in_l   = ring_i;
  assign ring_o = out_l;

  // ---------------------------------------------------------------------------------------------
  // input buffers, one per VC
  flit_t [1:0]          vc_head;
  logic  [1:0]          vc_valid, vc_push, vc_pop, ej_pop;
  logic  [1:0][CW-1:0]  vc_cnt;
  logic  [REQS-1:0]     gnt;

  for (genvar v = 0; v < 2; v++) begin : g_vc
    assign vc_push[v] = in_l.valid && in_l.vc == 1'(v);
    assign vc_pop[v]  = gnt[v] || ej_pop[v];
    noc_fifo #(.W(FW), .DEPTH(DEPTH)) u_buf (
      .clk_i, .rst_ni,
      .push_i  (vc_push[v]),
      .data_i  (in_l.flit),
      .pop_i   (vc_pop[v]),
      .head_o  (vc_head[v]),
      .valid_o (vc_valid[v]),
      .count_o (vc_cnt[v])
    );
    // a head leaves either to the ring or to the endpoint, never both
    `ASSERT_NEVER(PopOnce, gnt[v] && ej_pop[v])
    // the upstream router sent on credits only: the buffer never holds more than DEPTH flits
    `ASSERT(BufWithinDepth, vc_cnt[v] <= CW'(DEPTH))
    // every buffered flit is addressed to a node of the ring
    `ASSERT(HeadDstExists, vc_valid[v] |-> 32'(vc_head[v].dst) < NODES)
  end
  assign crd_o = vc_pop;

  // the link into router 0 crosses the dateline: it carries VC1 only; a VC1 flit never reaches the
  // dateline again (a flit travels at most NODES hops and crosses it at most once)
  if (ID == 0) begin : g_dateline_in
    `ASSERT_NEVER(Vc0IntoRouter0, in_l.valid && !in_l.vc)
  end

  // ---------------------------------------------------------------------------------------------
  // injection queue, with the destination check on entry
  flit_t         inj_head;
  logic          inj_valid, inj_accept, inj_good, inj_push;
  logic [IW-1:0] inj_cnt;
  logic          bad_q, bad_d;

  assign inj_ready_o = inj_cnt < IW'(INJ_DEPTH);
  assign inj_accept  = inj_valid_i && inj_ready_o;
  assign inj_good    = 32'(inj_dst_i) < NODES;
  assign inj_push    = inj_accept && inj_good;
  assign bad_d       = bad_q || (inj_accept && !inj_good);
  assign bad_dst_o   = bad_q;

  noc_fifo #(.W(FW), .DEPTH(INJ_DEPTH)) u_inj (
    .clk_i, .rst_ni,
    .push_i  (inj_push),
    .data_i  ({inj_dst_i, ME, inj_tag_i, inj_data_i}),
    .pop_i   (gnt[2]),
    .head_o  (inj_head),
    .valid_o (inj_valid),
    .count_o (inj_cnt)
  );

  if (ASSERT_DST) begin : g_dst_check
    // a flit to a node that does not exist is a bug of the endpoint (refused, bad_dst_o)
    `ASSERT(InjDstExists, inj_accept |-> 32'(inj_dst_i) < NODES)
  end
  `ASSERT(InjHeld, inj_valid_i && !inj_ready_o |=> inj_valid_i)
  `ASSERT(InjStable, inj_valid_i && !inj_ready_o |=> $stable({inj_dst_i, inj_tag_i, inj_data_i}))

  // ---------------------------------------------------------------------------------------------
  // the outgoing link: requests, credits, grant (through first, injection after INJ_STARVE cycles)
  logic [REQS-1:0]      req, elig, ovc;
  logic [1:0][CW-1:0]   crd_q, crd_d;
  logic                 tprio_q, tprio_d;   // the VC whose through flit goes first next time
  logic [AGE_W-1:0]     age_q, age_d;       // cycles the injection head has waited (saturating)
  logic                 starving;

  assign req[0] = vc_valid[0] && vc_head[0].dst != ME;
  assign req[1] = vc_valid[1] && vc_head[1].dst != ME;
  assign req[2] = inj_valid;
  assign ovc    = {DATELINE, 1'b1, DATELINE};
  assign starving = inj_valid && age_q >= AGE_W'(INJ_STARVE);
  for (genvar i = 0; i < int'(REQS); i++) begin : g_elig
    assign elig[i] = req[i] && crd_q[ovc[i]] != '0;
  end

  always_comb begin
    gnt = '0;
    if (starving && elig[2])                gnt[2] = 1'b1;
    else if (elig[0] && elig[1])            gnt = {1'b0, tprio_q, !tprio_q};
    else if (elig[0] || elig[1])            gnt[1:0] = elig[1:0];
    else if (elig[2])                       gnt[2] = 1'b1;
    tprio_d = gnt[0] ? 1'b1 : gnt[1] ? 1'b0 : tprio_q;
    age_d   = !inj_valid || gnt[2] ? '0 : age_q == AGE_W'(INJ_STARVE) ? age_q : age_q + AGE_W'(1);
  end

  always_comb begin
    out_l = '0;
    if (gnt[2])      out_l = '{valid: 1'b1, vc: ovc[2], flit: inj_head};
    else if (gnt[1]) out_l = '{valid: 1'b1, vc: ovc[1], flit: vc_head[1]};
    else if (gnt[0]) out_l = '{valid: 1'b1, vc: ovc[0], flit: vc_head[0]};
  end

  for (genvar v = 0; v < 2; v++) begin : g_crd
    assign crd_d[v] = crd_q[v] - CW'(out_l.valid && out_l.vc == 1'(v)) + CW'(crd_i[v]);
    // a flit is only sent on a credit; credits never exceed the downstream buffer
    `ASSERT(SendOnCredit, out_l.valid && out_l.vc == 1'(v) |-> crd_q[v] != '0)
    `ASSERT(CreditInRange, crd_q[v] <= CW'(DEPTH))
  end

  assign send_o    = out_l.valid;
  assign contend_o = (req[0] || req[1]) && req[2];

  `ASSERT_ONEHOT0(OneGrant, gnt)
  `ASSERT(AgeInRange, age_q <= AGE_W'(INJ_STARVE))
  // a starving injection goes as soon as its output VC has a credit
  `ASSERT(StarvingGoesOnCredit, starving && crd_q[ovc[2]] != '0 |-> gnt[2])
  if (DATELINE) begin : g_dateline_out
    `ASSERT_NEVER(Vc1CrossesTwice, req[1])
  end

  // ---------------------------------------------------------------------------------------------
  // eject: the VC whose head is for this node; alternate when both are; hold a refused choice
  logic [1:0] ej_req;
  logic       ej_sel, ej_lock_q, ej_lock_d, ej_sel_q, ej_sel_d, ej_prio_q, ej_prio_d, ej_fire;

  assign ej_req[0] = vc_valid[0] && vc_head[0].dst == ME;
  assign ej_req[1] = vc_valid[1] && vc_head[1].dst == ME;
  always_comb begin
    ej_sel = ej_req[1];
    if (ej_lock_q) ej_sel = ej_sel_q;
    else if (&ej_req) ej_sel = ej_prio_q;
  end
  assign ej_valid_o = ej_req[ej_sel];
  assign ej_flit_o  = vc_head[ej_sel];
  assign ej_fire    = ej_valid_o && ej_ready_i;
  assign ej_pop     = {ej_fire && ej_sel, ej_fire && !ej_sel};
  assign ej_lock_d  = ej_valid_o && !ej_ready_i;
  assign ej_sel_d   = ej_sel;
  assign ej_prio_d  = ej_fire ? !ej_sel : ej_prio_q;

  // a refused eject flit stays offered until taken
  `ASSERT(EjHeld, ej_valid_o && !ej_ready_i |=> ej_valid_o && $stable(ej_flit_o))

  // ---------------------------------------------------------------------------------------------
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      crd_q     <= {2{CW'(DEPTH)}};
      tprio_q   <= 1'b0;
      age_q     <= '0;
      bad_q     <= 1'b0;
      ej_lock_q <= 1'b0;
      ej_sel_q  <= 1'b0;
      ej_prio_q <= 1'b0;
    end else begin
      crd_q     <= crd_d;
      tprio_q   <= tprio_d;
      age_q     <= age_d;
      bad_q     <= bad_d;
      ej_lock_q <= ej_lock_d;
      ej_sel_q  <= ej_sel_d;
      ej_prio_q <= ej_prio_d;
    end
  end

  `ASSERT_KNOWN(StatusKnown, {inj_ready_o, ej_valid_o, bad_dst_o, send_o, crd_o})
endmodule
