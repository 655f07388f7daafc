// IEEE-754 binary32 to int32, truncating toward zero and saturating to [INT_MIN, INT_MAX]
// (±inf saturate); NaN gives 0. Combinational (latency 0).
module fp32_f2i (
  input  logic [31:0] a_i,
  output logic [31:0] result_o
);

  assign result_o = fp32_pkg::f2i(a_i);

endmodule
