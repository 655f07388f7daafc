// IEEE-754 binary32 multiplication a * b, round to nearest even, subnormals in and out.
// inf * 0 and any NaN operand give the canonical NaN 0x7FC00000. Combinational (latency 0).
module fp32_mul (
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  output logic [31:0] result_o
);

  // one shared simulation model for every instance (many instances, much faster Verilator builds)
  /* verilator no_inline_module */

  localparam logic [31:0] QNAN = 32'h7fc0_0000;

  logic sign, a_nan, b_nan, a_inf, b_inf, a_zero, b_zero;
  assign sign   = a_i[31] ^ b_i[31];
  assign a_nan  = (a_i[30:23] == 8'hff) && (a_i[22:0] != '0);
  assign b_nan  = (b_i[30:23] == 8'hff) && (b_i[22:0] != '0);
  assign a_inf  = (a_i[30:23] == 8'hff) && (a_i[22:0] == '0);
  assign b_inf  = (b_i[30:23] == 8'hff) && (b_i[22:0] == '0);
  assign a_zero = a_i[30:0] == '0;
  assign b_zero = b_i[30:0] == '0;

  logic [7:0] ea, eb;
  logic [23:0] ma, mb;
  logic [47:0] prod;
  assign ea   = (a_i[30:23] == '0) ? 8'd1 : a_i[30:23];
  assign eb   = (b_i[30:23] == '0) ? 8'd1 : b_i[30:23];
  assign ma   = {a_i[30:23] != '0, a_i[22:0]};
  assign mb   = {b_i[30:23] != '0, b_i[22:0]};
  assign prod = 48'(ma) * 48'(mb);

  // ma * mb * 2^(ea + eb - 254 - 46) = prod * 2^(exp - 127 - 47)  =>  exp = ea + eb - 126
  logic [31:0] rounded;
  fp32_round #(.W(48)) u_round (
    .sign_i  (sign),
    .exp_i   (12'(ea) + 12'(eb) - 12'sd126),
    .sig_i   (prod),
    .sticky_i(1'b0),
    .result_o(rounded)
  );

  always_comb begin
    if (a_nan || b_nan || (a_inf && b_zero) || (a_zero && b_inf)) result_o = QNAN;
    else if (a_inf || b_inf) result_o = {sign, 8'hff, 23'd0};
    else if (a_zero || b_zero) result_o = {sign, 31'd0};
    else result_o = rounded;
  end

endmodule
