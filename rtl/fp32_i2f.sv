// int32 (signed_i = 1) or uint32 (signed_i = 0) to IEEE-754 binary32, round to nearest even.
// Combinational (latency 0).
module fp32_i2f (
  input  logic        signed_i,
  input  logic [31:0] a_i,
  output logic [31:0] result_o
);

  logic neg;
  logic [31:0] mag;
  assign neg = signed_i && a_i[31];
  assign mag = neg ? -a_i : a_i;  // |INT_MIN| = 2^31 fits unsigned

  // mag = mag * 2^(exp - 127 - 31)  =>  exp = 158
  fp32_round #(.W(32)) u_round (
    .sign_i  (neg),
    .exp_i   (12'sd158),
    .sig_i   (mag),
    .sticky_i(1'b0),
    .result_o(result_o)
  );

endmodule
