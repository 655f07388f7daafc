// IEEE-754 binary32 division a / b, round to nearest even, subnormals in and out (FRECIP is
// 1.0 / b). x/0 = ±inf, 0/0, inf/inf and NaN operands give the canonical NaN 0x7FC00000.
// Significands are normalised, then a restoring digit recurrence produces 27 quotient bits
// (24 + guard + one spare) and the final remainder is the sticky bit.
// Combinational (latency 0): the VPU pipeline around it gives FDIV/FRECIP their 6 cycles.
module fp32_div (
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  output logic [31:0] result_o
);

  assign result_o = fp32_pkg::div(a_i, b_i);

endmodule
