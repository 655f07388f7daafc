// epi: the PSUM drain epilogue of PEPI.B/.BR/.BQ/.BRQ (doc/epilogue.md, golden/epilogue.py). The
// TensorCore reads a PSUM tile of int32 accumulators on its core read port in the issue cycle; the
// tile leaves PSUM the next cycle (acc_i) and passes through this stage into res_o:
//   x = acc[r][c] + bias[r][c]                                   (int32 wrap)
//   requantise (mode_i[1]): m = vq[0][c], k = clamp(vq[1][c], 0, 63) (both signed int32)
//     p = x * m (64-bit signed, exact); y = (p >>> k) + (k > 0 ? p[k-1] : 0)  (round half up:
//     floor((p + 2^(k-1)) / 2^k) without the 65-bit add); y saturated to [-128, 127]
//   ReLU (mode_i[0]), last: y = max(y, 0)
//   the lane is y as a signed 32-bit value (an int8 result sign-extended)
//
// Contract: valid_i marks a PEPI's issue cycle; mode_i (fn[1:0]), bias_i (VRF port b) and vq_i
// (VRF port c) are sampled then. acc_i must hold that PEPI's PSUM tile in the next cycle (PSUM's
// registered read). One PEPI may issue every cycle (fully pipelined).
// Latency: res_o holds the result from the second cycle after issue until the next PEPI's result
// replaces it (issue-to-write-back 2, tinytpu_pkg::LAT_EPI); valid_o is high in that cycle.
module epi
  import tinytpu_pkg::*;
#(
  parameter int unsigned N = 4,
  localparam int unsigned L = N * N
) (
  input  logic               clk_i,
  input  logic               rst_ni,
  input  logic               valid_i,
  input  logic [1:0]         mode_i,   // bit 0: ReLU, bit 1: requantise
  input  logic [L-1:0][31:0] bias_i,
  input  logic [L-1:0][31:0] vq_i,     // row 0: multipliers, row 1: shifts (per lane c)
  input  logic [L-1:0][31:0] acc_i,    // the PSUM tile, the cycle after valid_i
  output logic               valid_o,
  output logic [L-1:0][31:0] res_o
);
  // stage 1: the operands of the PEPI issued last cycle (only rows 0 and 1 of vq count)
  logic               fresh_q, relu_q, quant_q;
  logic [L-1:0][31:0] bias_q;
  logic [N-1:0][31:0] mult_q;
  logic [N-1:0][5:0]  shift_q;  // already clamped to [0, 63]
  logic [N-1:0][5:0]  shift_d;

  // a signed 32-bit shift amount clamped to [0, 63]: negative gives 0, above 63 gives 63
  always_comb begin
    for (int c = 0; c < N; c++) begin
      if (vq_i[N + c][31])              shift_d[c] = 6'd0;
      else if (vq_i[N + c][30:6] != '0) shift_d[c] = 6'd63;
      else                              shift_d[c] = vq_i[N + c][5:0];
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      fresh_q <= 1'b0;
      relu_q  <= 1'b0;
      quant_q <= 1'b0;
      bias_q  <= '0;
      mult_q  <= '0;
      shift_q <= '0;
    end else begin
      fresh_q <= valid_i;
      if (valid_i) begin
        relu_q  <= mode_i[0];
        quant_q <= mode_i[1];
        bias_q  <= bias_i;
        for (int c = 0; c < N; c++) mult_q[c] <= vq_i[c];
        shift_q <= shift_d;
      end
    end
  end

  // stage 1 logic: one lane's epilogue
  function automatic logic [31:0] lane(input logic [31:0] acc, input logic [31:0] bias, input logic [31:0] mult,
                                       input logic [5:0] k, input logic relu, input logic quant);
    logic signed [31:0] x;
    logic signed [63:0] p, sh, y;
    logic               rnd;
    logic signed [31:0] out;
    x = $signed(acc + bias);
    p = 64'(x) * 64'($signed(mult));
    rnd = (k != 6'd0) && p[k - 6'd1];
    sh = p >>> k;            // its own statement: in a mixed-sign sum >>> would be a logical shift
    y = sh + $signed({63'd0, rnd});
    if (!quant)           out = x;
    else if (y > 64'sd127)  out = 32'sd127;
    else if (y < -64'sd128) out = -32'sd128;
    else                  out = 32'(y);
    if (relu && out < 0) out = '0;
    return out;
  endfunction

  logic [L-1:0][31:0] res_d, res_q;
  always_comb begin
    for (int l = 0; l < L; l++) res_d[l] = lane(acc_i[l], bias_q[l], mult_q[l % N], shift_q[l % N], relu_q, quant_q);
  end

  // stage 2: the result register, written back by the VRF (WB_EPI) in this cycle
  logic valid_q, relu2_q, quant2_q;  // relu2_q/quant2_q: res_q's mode (for the assertions)
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      valid_q  <= 1'b0;
      relu2_q  <= 1'b0;
      quant2_q <= 1'b0;
      res_q    <= '0;
    end else begin
      valid_q <= fresh_q;
      if (fresh_q) begin
        res_q    <= res_d;
        relu2_q  <= relu_q;
        quant2_q <= quant_q;
      end
    end
  end

  assign valid_o = valid_q;
  assign res_o   = res_q;

  `include "assert.svh"
  // the clamp keeps every shift in [0, 63] and the saturation every requantised lane in int8
  `ASSERT(EpiShiftClamped, valid_i && vq_i[N][31] |-> shift_d[0] == 6'd0)
  `ASSERT(EpiRequantInt8, valid_q && quant2_q |-> $signed(res_q[0]) <= 127 && $signed(res_q[0]) >= -128)
  `ASSERT(EpiReluNonNegative, valid_q && relu2_q |-> !res_q[0][31])
endmodule
