// One node of an fp32 reduction tree: a + b, max(a, b), min(a, b) or a * b (IEEE-754 binary32,
// RNE; max/min propagate NaN and order -0 below +0, as the lane-wise FMAX/FMIN).
// Combinational (latency 0).
module fp32_redop (
  input  logic [1:0]  op_i,  // 0: sum, 1: max, 2: min, 3: prod
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  output logic [31:0] result_o
);

  assign result_o = fp32_pkg::redop(op_i, a_i, b_i);

endmodule
