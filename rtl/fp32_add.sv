// IEEE-754 binary32 addition a + b, round to nearest even, subnormals in and out. Subtraction is
// the caller's job (flip b's sign bit). NaN results are the canonical quiet NaN 0x7FC00000;
// inf + -inf is NaN; an exact zero sum is +0 unless both operands are -0.
// Combinational (latency 0).
module fp32_add (
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  output logic [31:0] result_o
);

  assign result_o = fp32_pkg::add(a_i, b_i);

endmodule
