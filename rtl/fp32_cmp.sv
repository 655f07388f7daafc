// IEEE-754 binary32 comparisons and min/max. lt/eq are the IEEE ordered predicates (-0 == +0, a
// NaN compares false); max/min propagate NaN as the canonical 0x7FC00000 and
// order -0 below +0 (max(-0, +0) = +0, min(-0, +0) = -0). Combinational (latency 0).
module fp32_cmp (
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  output logic        lt_o,
  output logic        eq_o,
  output logic [31:0] max_o,
  output logic [31:0] min_o
);

  localparam logic [31:0] QNAN = 32'h7fc0_0000;

  // total-order keys: unsigned compare of the keys orders the values, with -0 just below +0
  logic [31:0] ka, kb;
  logic both_zero, klt, unord;
  assign ka        = a_i[31] ? ~a_i : {1'b1, a_i[30:0]};
  assign kb        = b_i[31] ? ~b_i : {1'b1, b_i[30:0]};
  assign klt       = ka < kb;
  assign both_zero = (a_i[30:0] == '0) && (b_i[30:0] == '0);
  assign unord   = ((a_i[30:23] == 8'hff) && (a_i[22:0] != '0))
                   || ((b_i[30:23] == 8'hff) && (b_i[22:0] != '0));

  assign lt_o  = !unord && !both_zero && klt;
  assign eq_o  = !unord && (both_zero || a_i == b_i);
  assign max_o = unord ? QNAN : (klt ? b_i : a_i);
  assign min_o = unord ? QNAN : (klt ? a_i : b_i);

endmodule
