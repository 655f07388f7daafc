// One node of an fp32 reduction tree: a + b, max(a, b), min(a, b) or a * b (IEEE-754 binary32,
// RNE; max/min propagate NaN and order -0 below +0, as the lane-wise FMAX/FMIN).
// Combinational (latency 0).
module fp32_redop (
  input  logic [1:0]  op_i,  // 0: sum, 1: max, 2: min, 3: prod
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  output logic [31:0] result_o
);

  // one shared simulation model for every instance (many instances, much faster Verilator builds)
  /* verilator no_inline_module */

  logic [31:0] sum, prod, mx, mn;
  logic lt, eq;
  fp32_add u_add (.a_i(a_i), .b_i(b_i), .result_o(sum));
  fp32_mul u_mul (.a_i(a_i), .b_i(b_i), .result_o(prod));
  fp32_cmp u_cmp (.a_i(a_i), .b_i(b_i), .lt_o(lt), .eq_o(eq), .max_o(mx), .min_o(mn));

  always_comb begin
    unique case (op_i)
      2'd0:    result_o = sum;
      2'd1:    result_o = mx;
      2'd2:    result_o = mn;
      default: result_o = prod;
    endcase
  end

  logic unused;
  assign unused = lt ^ eq;

endmodule
