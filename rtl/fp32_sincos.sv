// FSIN / FCOS datapath (doc/transcendental.md "FSIN and FCOS"). Range reduction: |x| * 2/pi mod 4
// in Q62 from the 24-bit significand times a 96-bit window of 2/pi (TWO_OVER_PI) picked by the
// exponent (three 24 x 32 products); cos adds a quarter turn. The nearest quadrant q and the
// remainder t in [-1/2, 1/2) select sin(pi/2 t) (t times a Q30 polynomial in t^2, SIN_C) or
// cos(pi/2 t) (COS_C), with the sign from q (and, for sin, from x). Gives the magnitude
// p_o * 2^x_o and sign neg_o for fp32_trans to round, or, when special_o, the final result
// special_res_o (NaN for NaN and ±inf; for |x| < 2^-12 sin x = x and cos x = 1.0).
// Combinational (latency 0).
module fp32_sincos
  import tinytpu_pkg::*;
(
  input  logic               cos_i,
  input  logic        [31:0] a_i,
  output logic               special_o,
  output logic        [31:0] special_res_o,
  output logic               neg_o,
  output logic        [61:0] p_o,
  output logic signed [11:0] x_o
);

  fp32_pkg::trans_t r;
  assign r             = fp32_pkg::sincos(cos_i, a_i);
  assign special_o     = r.special;
  assign special_res_o = r.special_res;
  assign neg_o         = r.neg;
  assign p_o           = r.p;
  assign x_o           = r.x;

endmodule
