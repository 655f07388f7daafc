// mxu_pe: one processing element of the weight-stationary systolic array.
// Holds two weights (bank 0 and 1, the active and the shadow weight of the MXU), each the 24 bits
// of a weight lane the MXU uses: {bf16 (lane bits 31:16), int8 (lane bits 7:0)}. Each cycle it
// multiplies the activation arriving from the left by the weight of the bank that activation
// carries, adds the partial sum arriving from above, and registers both: the activation (with its
// bank and mode bits) moves one PE right, the sum one PE down.
// Modes (fp_i, carried by the activation like its bank):
//   int8 (fp_i = 0): sum_o = sum_i + int8(a_i[7:0]) * int8(w[7:0]), int32 wrap.
//   bf16 (fp_i = 1): sum_o = fp32 add(sum_i, fp32 mul(bf16 a_i, bf16 w[23:8])) (fp32_pkg: RNE,
//        subnormals kept, canonical NaN). A bf16 x bf16 product is exact unless it over- or
//        underflows.
// Only the mode's datapath is evaluated (the other is not computed in simulation).
// Latency: 1 cycle in both modes (activation and partial sum are both registered).
module mxu_pe (
  input  logic               clk_i,
  input  logic               rst_ni,
  // weight load: both banks are written only by MLW, one bank at a time
  input  logic               w_we_i,
  input  logic               w_bank_i,
  input  logic [23:0]        w_i,
  // activation from the left (with its weight bank and mode), partial sum from above
  input  logic [15:0]        a_i,     // int8 mode: bits 7:0; bf16 mode: the bf16
  input  logic               bank_i,
  input  logic               fp_i,
  input  logic [31:0]        sum_i,
  output logic [15:0]        a_o,
  output logic               bank_o,
  output logic               fp_o,
  output logic [31:0]        sum_o
);
  logic [23:0] w_q [2];
  logic [15:0] a_q;
  logic        bank_q, fp_q;
  logic [31:0] sum_q, sum_d;
  logic [23:0] w;

  assign w = w_q[bank_i];

  // one shared copy of the fp32 multiply-add for every PE (not inlined: the PE itself stays small
  // enough for Verilator to flatten into the array, which keeps the int8 path fast)
  function automatic logic [31:0] bf16_mac(logic [31:0] s, logic [15:0] a, logic [15:0] b);
    /*verilator no_inline_task*/
    return fp32_pkg::add(s, fp32_pkg::mul({a, 16'd0}, {b, 16'd0}));
  endfunction

  always_comb begin
    if (fp_i) begin
      sum_d = bf16_mac(sum_i, a_i, w[23:8]);
    end else begin
      // int8 x int8 fits in 16 bits (-128 * -128 = 16384); the 32-bit add wraps
      sum_d = sum_i + 32'($signed(a_i[7:0]) * $signed(w[7:0]));
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      w_q[0] <= '0;
      w_q[1] <= '0;
      a_q    <= '0;
      bank_q <= 1'b0;
      fp_q   <= 1'b0;
      sum_q  <= '0;
    end else begin
      if (w_we_i) w_q[w_bank_i] <= w_i;
      a_q    <= a_i;
      bank_q <= bank_i;
      fp_q   <= fp_i;
      sum_q  <= sum_d;
    end
  end

  assign a_o    = a_q;
  assign bank_o = bank_q;
  assign fp_o   = fp_q;
  assign sum_o  = sum_q;
endmodule
