// FEXP2 datapath (doc/transcendental.md "FEXP2"): 2^x = 2^i * 2^f with x = i + f in Q32 fixed
// point (truncated toward zero), f in [0, 1), and 2^f from a Q30 Horner polynomial (EXP2_C).
// Gives the unrounded magnitude p_o * 2^x_o for fp32_trans to round, or, when special_o, the final
// result special_res_o (NaN; |x| >= 256 and ±inf: +inf or +0). Combinational (latency 0).
module fp32_exp2
  import tinytpu_pkg::*;
(
  input  logic               [31:0] a_i,
  output logic                      special_o,
  output logic               [31:0] special_res_o,
  output logic               [61:0] p_o,
  output logic signed        [11:0] x_o
);

  fp32_pkg::trans_t r;
  assign r             = fp32_pkg::exp2(a_i);
  assign special_o     = r.special;
  assign special_res_o = r.special_res;
  assign p_o           = r.p;
  assign x_o           = r.x;

  logic unused;
  assign unused = r.neg;  // exp2 is never negative

endmodule
