// noc: the on-chip network (doc/noc.md, architecture.md section 8): a unidirectional ring of NODES
// routers (rtl/noc_router.sv), one per endpoint; the chip joins two TensorCores, the HBM
// controller and the SparseCore (NODES = 4). Router r's ring link goes to router (r+1) mod NODES.
//
// Contract
// - A packet is one flit {dst, src, tag, data}: dst and src node ids (ID_W bits), a tag the
//   endpoints use freely (a sequence number, a request id), PW bits of payload (one N x N tile of
//   32-bit lanes in the chip, PW = N*N*32).
// - Inject (per node r): inj_valid_i/inj_ready_o with {dst, tag, data}; the network stamps src = r.
//   inj_ready_o depends only on the router's queue (not on inj_valid_i); an offered flit must be
//   held unchanged until taken (asserted).
// - Eject (per node r): ej_valid_o/ej_ready_i with {src, tag, data} (dst = r); an offered flit is
//   held until taken. The endpoint may refuse for as long as it likes (back-pressure travels back
//   through the credits to every sender), but it must not make taking a flit wait for its own
//   inject port (the consumption assumption every deadlock-free network needs: a protocol whose
//   replies are sent before requests are taken needs a second network or an endpoint buffer).
// - Delivery: every accepted flit with dst < NODES is delivered exactly once, to dst, intact. Flits
//   of one source to one destination arrive in the order they were accepted (one path, FIFOs
//   all the way). Nothing is ever dropped: a flit moves only onto a credit, i.e. a free slot.
// - A flit to a node that does not exist (dst >= NODES, possible when NODES < 2^ID_W) is accepted and
//   refused: bad_dst_o[r] rises and stays high until reset (err_o is their OR), the InjDstExists
//   assertion fires (ASSERT_DST), and the flit never enters the ring.
// - dst = src is legal: the flit goes once around the ring (NODES hops).
//
// Latency and throughput
// - Every link has LINK_LATENCY >= 1 pipeline registers; a flit also spends one cycle in each
//   router's buffer (no bypass). A flit to a node H hops downstream ((dst - src) mod NODES, NODES
//   when dst = src) accepted at cycle t is offered on dst's eject port at t + 1 + H*(LINK_LATENCY+1)
//   when nothing else is in its way (zero load).
// - Credits: each VC buffer holds DEPTH flits; a slot freed at cycle p is usable by the upstream
//   router again at p + LINK_LATENCY + 1, so a slot's round trip is 2*LINK_LATENCY + 2 cycles and
//   DEPTH = 2*LINK_LATENCY + 2 (the default) lets one VC alone keep its link busy every cycle.
// - Each link carries one flit a cycle; each endpoint injects and ejects one flit a cycle.
//
// Deadlock freedom: two virtual channels with a dateline. The dateline is the link from router
// NODES-1 to router 0: a flit crossing it moves from VC0 to VC1, and a flit never crosses it twice
// (it travels at most NODES hops). Buffers depend on each other only along VC0 of routers 1 .. NODES-1,
// then the dateline, then VC1 of routers 0 .. NODES-1: the channel dependency graph is a chain with
// no cycle (Dally and Seitz), so with every endpoint consuming eventually, every head of every
// buffer eventually moves on (to the next buffer, which by induction from the chain's end drains,
// or out of its eject port). Injection never takes part in a cycle either: the ring never waits
// on an injection queue. Each link gives through traffic priority, but an injection that has waited
// INJ_STARVE cycles goes first, on its output VC's next credit (noc_router.sv), so no
// endpoint's injection starves: it waits at most INJ_STARVE cycles plus one credit round trip of a
// draining downstream buffer.
//
// Structure: NODES routers; per link LINK_LATENCY registers of {valid, vc, flit} downstream and
// LINK_LATENCY registers of the two credit bits upstream.
module noc #(
  parameter int unsigned  NODES        = 4,
  parameter int unsigned  LINK_LATENCY = 2,
  parameter int unsigned  ID_W         = 4,
  parameter int unsigned  TAG_W        = 16,
  parameter int unsigned  PW           = 512,
  parameter int unsigned  DEPTH        = 2 * LINK_LATENCY + 2,
  parameter int unsigned  INJ_STARVE   = 8,
  parameter bit           ASSERT_DST   = 1'b1,
  localparam int unsigned FW           = 2 * ID_W + TAG_W + PW,
  localparam int unsigned LAT          = LINK_LATENCY
) (
  input  logic                        clk_i,
  input  logic                        rst_ni,
  // inject
  input  logic [NODES-1:0]            inj_valid_i,
  output logic [NODES-1:0]            inj_ready_o,
  input  logic [NODES-1:0][ID_W-1:0]  inj_dst_i,
  input  logic [NODES-1:0][TAG_W-1:0] inj_tag_i,
  input  logic [NODES-1:0][PW-1:0]    inj_data_i,
  // eject
  output logic [NODES-1:0]            ej_valid_o,
  input  logic [NODES-1:0]            ej_ready_i,
  output logic [NODES-1:0][ID_W-1:0]  ej_src_o,
  output logic [NODES-1:0][TAG_W-1:0] ej_tag_o,
  output logic [NODES-1:0][PW-1:0]    ej_data_o,
  // errors and status
  output logic [NODES-1:0]            bad_dst_o,   // sticky per node: a flit to a missing node refused
  output logic                        err_o,       // any bad_dst_o
  output logic [NODES-1:0]            link_busy_o, // link r (router r to r+1) takes a flit this cycle
  output logic [NODES-1:0]            contend_o    // router r: through traffic and injection both request link r
);
  `include "assert.svh"
  `ASSERT_INIT(NodesInRange, NODES >= 2 && NODES <= (1 << ID_W))
  `ASSERT_INIT(LatencyPositive, LAT >= 1)
  `ASSERT_INIT(DepthPositive, DEPTH >= 1)

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
  `ASSERT_INIT(FlitWidth, $bits(flit_t) == FW)

  // link r: lnk_q[r][0] is written by router r, lnk_q[r][LAT-1] feeds router (r+1) mod NODES;
  // crd_q[r][0] is written by router (r+1) mod NODES, crd_q[r][LAT-1] returns to router r
  link_t      lnk_q [NODES][LAT];
  link_t      lnk_d [NODES][LAT];
  logic [1:0] crd_q [NODES][LAT];
  logic [1:0] crd_d [NODES][LAT];
  link_t [NODES-1:0]      r_out;
  logic  [NODES-1:0][1:0] r_crd;
  flit_t [NODES-1:0]      ej_flit;

  for (genvar r = 0; r < int'(NODES); r++) begin : g_node
    localparam int unsigned UP = (r + NODES - 1) % NODES;  // the router whose link arrives here

    noc_router #(
      .NODES(NODES), .ID(r), .ID_W(ID_W), .TAG_W(TAG_W), .PW(PW), .DEPTH(DEPTH), .INJ_STARVE(INJ_STARVE),
      .ASSERT_DST(ASSERT_DST)
    ) u_router (
      .clk_i, .rst_ni,
      .ring_i      (lnk_q[UP][LAT-1]),
      .crd_o       (r_crd[r]),
      .ring_o      (r_out[r]),
      .crd_i       (crd_q[r][LAT-1]),
      .inj_valid_i (inj_valid_i[r]),
      .inj_ready_o (inj_ready_o[r]),
      .inj_dst_i   (inj_dst_i[r]),
      .inj_tag_i   (inj_tag_i[r]),
      .inj_data_i  (inj_data_i[r]),
      .ej_valid_o  (ej_valid_o[r]),
      .ej_ready_i  (ej_ready_i[r]),
      .ej_flit_o   (ej_flit[r]),
      .bad_dst_o   (bad_dst_o[r]),
      .send_o      (link_busy_o[r]),
      .contend_o   (contend_o[r])
    );

    assign ej_src_o[r]  = ej_flit[r].src;
    assign ej_tag_o[r]  = ej_flit[r].tag;
    assign ej_data_o[r] = ej_flit[r].data;
    // a router ejects only what is addressed to it
    `ASSERT(EjectIsForMe, ej_valid_o[r] |-> 32'(ej_flit[r].dst) == r)
  end

  always_comb begin
    for (int r = 0; r < int'(NODES); r++) begin
      lnk_d[r][0] = r_out[r];
      crd_d[r][0] = r_crd[(r + 1) % NODES];
      for (int s = 1; s < int'(LAT); s++) begin
        lnk_d[r][s] = lnk_q[r][s-1];
        crd_d[r][s] = crd_q[r][s-1];
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      for (int r = 0; r < int'(NODES); r++) begin
        for (int s = 0; s < int'(LAT); s++) begin
          lnk_q[r][s] <= '0;
          crd_q[r][s] <= '0;
        end
      end
    end else begin
      lnk_q <= lnk_d;
      crd_q <= crd_d;
    end
  end

  assign err_o = |bad_dst_o;
endmodule
