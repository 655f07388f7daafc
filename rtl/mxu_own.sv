// mxu_own: the VMEM and PSUM tiles MXU commands in flight still own, for the SXU's interlocks.
//
// Every MMUL the SXU issues (push_i) enters a DEPTH-entry FIFO with its VMEM source range
// [v_lo, v_hi] and PSUM destination range [p_lo, p_hi]. The MXU finishes commands in order: its
// VMEM part when the fetch stage reads the command's last tile (vdone_i, from the next cycle on
// a write no longer changes what the MXU reads), its PSUM part when the last result row is
// written (pdone_i). The outputs are the bounding ranges of the parts still in flight, so a
// VST/PST/PLD or scatter waits only for the commands that still use its tiles, not for the MXU
// to go idle (an MLW's tile is read in its issue cycle and owns nothing afterwards).
// full_o holds the next MMUL's issue when every entry is taken. DEPTH covers what the MXU can
// hold at once (hold register, queue, fetch, tile buffer, rows in the array: under 10 MMULs), so
// no test reaches the hold; the NoOverflow assertion guards it.
// Latency: an entry counts from the cycle after push_i, a finished part stops counting the cycle
// after vdone_i / pdone_i.
module mxu_own #(
  parameter int unsigned DEPTH = 16
) (
  input  logic               clk_i,
  input  logic               rst_ni,
  input  logic               push_i,
  input  logic signed [33:0] v_lo_i,
  input  logic signed [33:0] v_hi_i,
  input  logic signed [33:0] p_lo_i,
  input  logic signed [33:0] p_hi_i,
  input  logic               vdone_i,
  input  logic               pdone_i,
  input  logic               mxu_idle_i,
  output logic               full_o,
  output logic               own_v_o,
  output logic signed [33:0] v_lo_o,
  output logic signed [33:0] v_hi_o,
  output logic               own_p_o,
  output logic signed [33:0] p_lo_o,
  output logic signed [33:0] p_hi_o
);
  `include "assert.svh"

  localparam int unsigned IW = $clog2(DEPTH);
  localparam int unsigned CW = $clog2(DEPTH + 1);

  typedef struct packed {
    logic signed [33:0] v_lo, v_hi, p_lo, p_hi;
  } range_t;

  range_t        ent_q [DEPTH];
  logic [IW-1:0] wr_q, vrd_q, prd_q;
  logic [CW-1:0] vcnt_q, pcnt_q;  // parts in flight: VMEM (the newest vcnt) and PSUM (pcnt >= vcnt)

  assign full_o = pcnt_q == CW'(DEPTH);

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      for (int i = 0; i < int'(DEPTH); i++) ent_q[i] <= '0;
      wr_q   <= '0;
      vrd_q  <= '0;
      prd_q  <= '0;
      vcnt_q <= '0;
      pcnt_q <= '0;
    end else begin
      if (push_i) begin
        ent_q[wr_q] <= '{v_lo: v_lo_i, v_hi: v_hi_i, p_lo: p_lo_i, p_hi: p_hi_i};
        wr_q <= wr_q + 1'b1;  // DEPTH is a power of two
      end
      if (vdone_i) vrd_q <= vrd_q + 1'b1;
      if (pdone_i) prd_q <= prd_q + 1'b1;
      vcnt_q <= vcnt_q + CW'(push_i) - CW'(vdone_i);
      pcnt_q <= pcnt_q + CW'(push_i) - CW'(pdone_i);
    end
  end

  // the bounding ranges of the parts in flight: entry vrd + i (i < vcnt), prd + i (i < pcnt)
  always_comb begin
    own_v_o = vcnt_q != '0;
    own_p_o = pcnt_q != '0;
    v_lo_o  = ent_q[vrd_q].v_lo;
    v_hi_o  = ent_q[vrd_q].v_hi;
    p_lo_o  = ent_q[prd_q].p_lo;
    p_hi_o  = ent_q[prd_q].p_hi;
    for (int i = 1; i < int'(DEPTH); i++) begin
      if (CW'(i) < vcnt_q) begin
        if (ent_q[vrd_q + IW'(i)].v_lo < v_lo_o) v_lo_o = ent_q[vrd_q + IW'(i)].v_lo;
        if (ent_q[vrd_q + IW'(i)].v_hi > v_hi_o) v_hi_o = ent_q[vrd_q + IW'(i)].v_hi;
      end
      if (CW'(i) < pcnt_q) begin
        if (ent_q[prd_q + IW'(i)].p_lo < p_lo_o) p_lo_o = ent_q[prd_q + IW'(i)].p_lo;
        if (ent_q[prd_q + IW'(i)].p_hi > p_hi_o) p_hi_o = ent_q[prd_q + IW'(i)].p_hi;
      end
    end
  end

  `ASSERT_INIT(DepthPow2, DEPTH >= 2 && (DEPTH & (DEPTH - 1)) == 0)
  // the MXU finishes only what was issued, VMEM part before PSUM part, and never more than DEPTH
  `ASSERT(NoOverflow, push_i |-> pcnt_q < CW'(DEPTH) || pdone_i)
  `ASSERT(VdoneHasEntry, vdone_i |-> vcnt_q != '0)
  `ASSERT(PdoneHasEntry, pdone_i |-> pcnt_q != '0)
  `ASSERT(VmemBeforePsum, vcnt_q <= pcnt_q)
  // an idle MXU owns nothing (every command it accepted has finished both parts)
  `ASSERT(IdleOwnsNothing, mxu_idle_i |-> pcnt_q == '0)
endmodule
