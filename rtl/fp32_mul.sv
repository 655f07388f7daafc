// IEEE-754 binary32 multiplication a * b, round to nearest even, subnormals in and out.
// inf * 0 and any NaN operand give the canonical NaN 0x7FC00000. Combinational (latency 0).
module fp32_mul (
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  output logic [31:0] result_o
);

  assign result_o = fp32_pkg::mul(a_i, b_i);

endmodule
