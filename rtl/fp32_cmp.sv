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

  assign lt_o  = fp32_pkg::lt(a_i, b_i);
  assign eq_o  = fp32_pkg::eq(a_i, b_i);
  assign max_o = fp32_pkg::max(a_i, b_i);
  assign min_o = fp32_pkg::min(a_i, b_i);

endmodule
