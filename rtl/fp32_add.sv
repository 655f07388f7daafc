// IEEE-754 binary32 addition a + b, round to nearest even, subnormals in and out. Subtraction is
// the caller's job (flip b's sign bit). NaN results are the canonical quiet NaN 0x7FC00000;
// inf + -inf is NaN; an exact zero sum is +0 unless both operands are -0.
// Combinational (latency 0).
module fp32_add (
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  output logic [31:0] result_o
);

  // one shared simulation model for every instance (many instances, much faster Verilator builds)
  /* verilator no_inline_module */

  localparam logic [31:0] QNAN = 32'h7fc0_0000;
  localparam int unsigned G = 26;          // alignment bits kept below the smaller significand
  localparam int unsigned W = 1 + 24 + G;  // carry bit, significand, alignment bits

  // x is the operand of larger magnitude, y the other one
  logic swap;
  logic [31:0] x, y;
  assign swap = b_i[30:0] > a_i[30:0];
  assign x    = swap ? b_i : a_i;
  assign y    = swap ? a_i : b_i;

  logic x_nan, y_nan, x_inf, y_inf, x_zero, y_zero;
  assign x_nan  = (x[30:23] == 8'hff) && (x[22:0] != '0);
  assign y_nan  = (y[30:23] == 8'hff) && (y[22:0] != '0);
  assign x_inf  = (x[30:23] == 8'hff) && (x[22:0] == '0);
  assign y_inf  = (y[30:23] == 8'hff) && (y[22:0] == '0);
  assign x_zero = x[30:0] == '0;
  assign y_zero = y[30:0] == '0;

  // subnormals have exponent 1 and no hidden bit
  logic [7:0] ex, ey, d;
  logic [23:0] mx, my;
  assign ex = (x[30:23] == '0) ? 8'd1 : x[30:23];
  assign ey = (y[30:23] == '0) ? 8'd1 : y[30:23];
  assign mx = {x[30:23] != '0, x[22:0]};
  assign my = {y[30:23] != '0, y[22:0]};
  assign d  = ex - ey;

  // align y; bits shifted past the G alignment bits only survive as a sticky remainder
  logic [W-1:0] big, y_full, y_al, lost_mask, sum;
  logic lost, sub;
  assign big       = {1'b0, mx, G'(0)};
  assign y_full    = {1'b0, my, G'(0)};
  assign y_al     = y_full >> d;
  assign lost_mask = ~({W{1'b1}} << d);
  assign lost      = |(y_full & lost_mask);
  assign sub       = x[31] ^ y[31];
  // x - (y_al + frac) = (x - y_al - 1) + (1 - frac): both keep a remainder in (0, 1) ulp
  assign sum       = sub ? big - y_al - W'(lost) : big + y_al;

  logic [31:0] rounded;
  fp32_round #(.W(W)) u_round (
    .sign_i  (x[31]),
    .exp_i   (12'(ex) + 12'sd1),
    .sig_i   (sum),
    .sticky_i(lost),
    .result_o(rounded)
  );

  always_comb begin
    if (x_nan || y_nan || (x_inf && y_inf && sub)) result_o = QNAN;
    else if (x_inf) result_o = x;
    else if (y_inf) result_o = y;
    else if (x_zero && y_zero) result_o = {x[31] & y[31], 31'd0};
    else if (sum == '0 && !lost) result_o = 32'd0;  // exact cancellation is +0 under RNE
    else result_o = rounded;
  end

endmodule
