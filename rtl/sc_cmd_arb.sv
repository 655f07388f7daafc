// sc_cmd_arb: the chip's command path from every core's SparseCore port (tensorcore's emb_*) to the
// one SparseCore (rtl/sparsecore.sv, doc/chip.md "The SparseCore on node 3"). Side-band wires, not
// NoC packets: a command is 8 words and at most one is pending per core.
//
// Contract
// - A core's lookup (emb_valid_i[k], a one-cycle pulse the SXU sends only while emb_busy_o[k] is
//   low) is always taken, into core k's pending entry (one: the SXU holds its issue at the lookup
//   until the index check answers, so it never has a second one).
// - One lookup at a time: while the SparseCore is idle (cmd_ready_i) a pending entry goes to it,
//   round robin when both cores have one (the core not granted last wins; out of reset core 0 first);
//   the granted core is the owner until the next grant.
// - The index check's answer (chk_valid_i, chk_bad_i) goes to the owner only.
// - emb_busy_o[k] = core k's entry is pending, or the SparseCore works for core k: the SXU's
//   interlocks (a DMA, EMB.WAIT, FENCE, HALT, SIG.SEND and a trap's drain wait while it is high)
//   then order core k's DMAs after its own lookups and nothing else. A lookup of the other core
//   never stalls core k's DMAs (only its next lookup, which waits in the pending entry); a core that
//   halted sees 0 (tensorcore's EmbIdleUnlessRunning). Cross-core order is the programs': a
//   SIG.SEND waits for the sender's lookups (release), so a lookup's writes are in HBM before a
//   signal sent after it.
// Latency: a lookup sent in cycle t reaches an idle SparseCore at t + 1 (the pending register);
// the answer goes back in the SparseCore's cycle (combinational routing).
// Verification: the unit env tb/sc_cmd_arb (tests/rtl/test_sc_cmd_arb.py) besides the chip's tests.
module sc_cmd_arb #(
  parameter int unsigned CORES = 2,
  localparam int unsigned CW   = CORES > 1 ? $clog2(CORES) : 1
) (
  input  logic                   clk_i,
  input  logic                   rst_ni,
  // the cores' command ports
  input  logic [CORES-1:0]       emb_valid_i,
  input  logic [CORES-1:0]       emb_fp_i,
  input  logic [CORES-1:0][31:0] emb_tbase_i,
  input  logic [CORES-1:0][31:0] emb_rows_i,
  input  logic [CORES-1:0][4:0]  emb_width_i,
  input  logic [CORES-1:0][15:0] emb_bag_i,
  input  logic [CORES-1:0][7:0]  emb_bags_i,
  input  logic [CORES-1:0][31:0] emb_idx_i,
  input  logic [CORES-1:0][31:0] emb_dst_i,
  output logic [CORES-1:0]       emb_busy_o,
  output logic [CORES-1:0]       emb_chk_valid_o,
  output logic [CORES-1:0]       emb_chk_bad_o,
  // the SparseCore's command port
  output logic                   cmd_valid_o,
  input  logic                   cmd_ready_i,
  output logic                   cmd_fp_o,
  output logic [31:0]            cmd_tbase_o,
  output logic [31:0]            cmd_rows_o,
  output logic [4:0]             cmd_width_o,
  output logic [15:0]            cmd_bag_o,
  output logic [7:0]             cmd_bags_o,
  output logic [31:0]            cmd_idx_o,
  output logic [31:0]            cmd_dst_o,
  input  logic                   chk_valid_i,
  input  logic                   chk_bad_i,
  input  logic                   busy_i
);
  `include "assert.svh"

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

  // the pending entries (one per core)
  logic [CORES-1:0] pend_q, pend_d;
  cmd_t             cmd_q [CORES];
  always_ff @(posedge clk_i) begin
    for (int k = 0; k < int'(CORES); k++) begin
      if (emb_valid_i[k])
        cmd_q[k] <= '{fp: emb_fp_i[k], tbase: emb_tbase_i[k], rows: emb_rows_i[k], width: emb_width_i[k],
                      bag: emb_bag_i[k], bags: emb_bags_i[k], idx: emb_idx_i[k], dst: emb_dst_i[k]};
    end
  end

  // the grant: the first pending core from prio_q on (round robin)
  logic [CW-1:0] prio_q, prio_d, own_q, own_d, pick;
  logic          any;
  always_comb begin
    pick = prio_q;
    any  = 1'b0;
    for (int i = int'(CORES) - 1; i >= 0; i--) begin
      logic [CW-1:0] c;
      c = CW'((int'(prio_q) + i) % int'(CORES));
      if (pend_q[c]) begin
        pick = c;
        any  = 1'b1;
      end
    end
  end

  assign cmd_valid_o = any && cmd_ready_i;
  assign cmd_fp_o    = cmd_q[pick].fp;
  assign cmd_tbase_o = cmd_q[pick].tbase;
  assign cmd_rows_o  = cmd_q[pick].rows;
  assign cmd_width_o = cmd_q[pick].width;
  assign cmd_bag_o   = cmd_q[pick].bag;
  assign cmd_bags_o  = cmd_q[pick].bags;
  assign cmd_idx_o   = cmd_q[pick].idx;
  assign cmd_dst_o   = cmd_q[pick].dst;

  always_comb begin
    pend_d = (pend_q | emb_valid_i) & ~(cmd_valid_o ? CORES'(1) << pick : '0);
    own_d  = cmd_valid_o ? pick : own_q;
    prio_d = cmd_valid_o ? CW'((int'(pick) + 1) % int'(CORES)) : prio_q;
  end

  for (genvar k = 0; k < int'(CORES); k++) begin : g_out
    assign emb_busy_o[k]      = pend_q[k] || (busy_i && own_q == CW'(k));
    assign emb_chk_valid_o[k] = chk_valid_i && own_q == CW'(k);
    assign emb_chk_bad_o[k]   = chk_bad_i && own_q == CW'(k);
    // the SXU sends only while its core's SparseCore is free, and one lookup at a time
    `ASSERT(LookupOnlyWhenFree, emb_valid_i[k] |-> !emb_busy_o[k])
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      pend_q <= '0;
      own_q  <= '0;
      prio_q <= '0;
    end else begin
      pend_q <= pend_d;
      own_q  <= own_d;
      prio_q <= prio_d;
    end
  end

  `ASSERT(GrantOnlyWhenIdle, cmd_valid_o |-> cmd_ready_i && !busy_i)
  `ASSERT(GrantPending, cmd_valid_o |-> pend_q[pick])
  `ASSERT(AnswerWhileBusy, chk_valid_i |-> busy_i)
  `ASSERT_KNOWN(ValidKnown, {emb_valid_i, chk_valid_i, busy_i})
endmodule
