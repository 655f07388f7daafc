// mxu_pe: one processing element of the weight-stationary systolic array.
// Holds two int8 weights (bank 0 and 1, the active and the shadow weight of the MXU). Each cycle
// it multiplies the int8 activation arriving from the left by the weight of the bank that
// activation carries, adds the partial sum arriving from above, and registers both: the
// activation (with its bank bit) moves one PE right, the sum one PE down.
// Latency: 1 cycle (activation and partial sum are both registered).
module mxu_pe (
  input  logic               clk_i,
  input  logic               rst_ni,
  // weight load: both banks are written only by MLW, one bank at a time
  input  logic               w_we_i,
  input  logic               w_bank_i,
  input  logic signed [7:0]  w_i,
  // activation from the left (with its weight bank), partial sum from above
  input  logic signed [7:0]  a_i,
  input  logic               bank_i,
  input  logic signed [31:0] sum_i,
  output logic signed [7:0]  a_o,
  output logic               bank_o,
  output logic signed [31:0] sum_o
);
  logic signed [7:0]  w_q [2];
  logic signed [7:0]  a_q;
  logic               bank_q;
  logic signed [31:0] sum_q;
  logic signed [15:0] prod;

  // int8 x int8 fits in 16 bits (-128 * -128 = 16384); the 32-bit add wraps
  assign prod = a_i * w_q[bank_i];

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      w_q[0] <= '0;
      w_q[1] <= '0;
      a_q    <= '0;
      bank_q <= 1'b0;
      sum_q  <= '0;
    end else begin
      if (w_we_i) w_q[w_bank_i] <= w_i;
      a_q    <= a_i;
      bank_q <= bank_i;
      sum_q  <= sum_i + 32'(prod);
    end
  end

  assign a_o    = a_q;
  assign bank_o = bank_q;
  assign sum_o  = sum_q;
endmodule
