// FLOG2 datapath (doc/transcendental.md "FLOG2"): x = M * 2^E with M in [1, 2) (subnormals
// normalised), M's top 5 fraction bits j pick a reciprocal r_j (LOG2_RECIP) so that
// z = M * r_j - 1 is in [0, 1/32), and log2 x = E + LOG2_TAB[j] + log2(1 + z), the last from a
// signed Q30 Horner polynomial (LOG2_C). Gives the signed Q40 result as neg_o and the magnitude
// p_o * 2^-40 for fp32_trans to round, or, when special_o, the final result special_res_o
// (NaN for NaN and negative inputs, -inf for ±0, +inf for +inf). Combinational (latency 0).
module fp32_log2
  import tinytpu_pkg::*;
(
  input  logic        [31:0] a_i,
  output logic               special_o,
  output logic        [31:0] special_res_o,
  output logic               neg_o,
  output logic        [61:0] p_o
);

  fp32_pkg::trans_t r;
  assign r             = fp32_pkg::log2(a_i);
  assign special_o     = r.special;
  assign special_res_o = r.special_res;
  assign neg_o         = r.neg;
  assign p_o           = r.p;

  logic [11:0] unused;
  assign unused = r.x;  // always 2^-40

endmodule
