// Normalise and round (IEEE-754 round to nearest even) an unpacked magnitude into a binary32 word.
// The input value is sig_i * 2^(exp_i - 127 - (W-1)), plus a nonzero remainder below the LSB of
// sig_i when sticky_i is set: exp_i is the biased exponent the result would have if sig_i's MSB
// were its leading one. Leading zeros are shifted out first; results below the normal range are
// shifted right into the subnormal format (gradual underflow) before rounding; overflow gives inf.
// A zero significand gives a zero of sign sign_i. Combinational (latency 0).
module fp32_round #(
  parameter int unsigned W = 32  // significand width; >= 26 so a guard and a sticky bit exist
) (
  input  logic               sign_i,
  input  logic signed [11:0] exp_i,
  input  logic [W-1:0]       sig_i,
  input  logic               sticky_i,
  output logic [31:0]        result_o
);

  // the package rounds a significand left-aligned in 64 bits
  assign result_o = fp32_pkg::round(sign_i, exp_i, 64'(sig_i) << (64 - W), sticky_i);

endmodule
