// IEEE-754 binary32 to int32, truncating toward zero and saturating to [INT_MIN, INT_MAX]
// (±inf saturate); NaN gives 0. Combinational (latency 0).
module fp32_f2i (
  input  logic [31:0] a_i,
  output logic [31:0] result_o
);

  logic [7:0] e;
  logic [23:0] m;
  logic [31:0] mag;
  assign e = a_i[30:23];
  assign m = {1'b1, a_i[22:0]};
  // |a| in [1, 2^31): the integer part is m shifted by the unbiased exponent e - 127 in [0, 30]
  assign mag = (e >= 8'd150) ? {8'd0, m} << (e - 8'd150) : {8'd0, m} >> (8'd150 - e);

  always_comb begin
    if (e == 8'hff && a_i[22:0] != '0) result_o = '0;             // NaN
    else if (e < 8'd127) result_o = '0;                           // |a| < 1
    else if (e >= 8'd158) result_o = a_i[31] ? 32'h8000_0000 : 32'h7fff_ffff;  // |a| >= 2^31
    else result_o = a_i[31] ? -mag : mag;
  end

endmodule
