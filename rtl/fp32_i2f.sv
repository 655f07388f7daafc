// int32 (signed_i = 1) or uint32 (signed_i = 0) to IEEE-754 binary32, round to nearest even.
// Combinational (latency 0).
module fp32_i2f (
  input  logic        signed_i,
  input  logic [31:0] a_i,
  output logic [31:0] result_o
);

  assign result_o = fp32_pkg::i2f(signed_i, a_i);

endmodule
