// One 32-bit VPU lane: every lane-wise non-fp function of the ISA (int32 arithmetic with the
// CDIV/CMOD edge cases, compares, bit ops, narrow-int casts, packed int8, SEL and MAC).
// Purely combinational (latency 0): vpu.sv registers the result and delays it to the write-back
// slot of the function (CDIV/CMOD: 4 cycles, the rest: 1), so the divider may be retimed into
// those stages by synthesis. Functions that are not lane-wise integer ops give 0.
module vpu_int_lane
  import tinytpu_pkg::*;
(
  input  vpu_fn_e     fn_i,
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  input  logic [31:0] c_i,
  output logic [31:0] result_o
);

  localparam logic [31:0] INT_MIN = 32'h8000_0000;
  localparam logic [31:0] INT_MAX = 32'h7fff_ffff;

  // only the selected function is computed (a simulator skips the other branches)
  logic [32:0] sum33, diff33, absdiff;
  logic [31:0] mag_a, mag_b, quo, rem, p8;
  logic [5:0] sh, sh_inv, cnt;
  logic lt_s, lt_u;
  always_comb begin
    // 33-bit exact sum and difference: bit 32 is the true sign, so overflow is bit 32 != bit 31
    sum33  = '0;
    diff33 = '0;
    if (fn_i inside {VPU_SATADD}) sum33 = {a_i[31], a_i} + {b_i[31], b_i};
    if (fn_i inside {VPU_SATSUB, VPU_ABSDIFF}) diff33 = {a_i[31], a_i} - {b_i[31], b_i};
    // |a - b| <= 2^32 - 1 needs 33 bits; anything past INT_MAX clamps
    absdiff = diff33[32] ? -diff33 : diff33;
    // |INT_MIN| = 2^31 fits an unsigned 32-bit value
    mag_a  = '0;
    mag_b  = '0;
    if (fn_i inside {VPU_ABS, VPU_CDIV, VPU_CMOD}) begin
      mag_a = a_i[31] ? -a_i : a_i;
      mag_b = b_i[31] ? -b_i : b_i;
    end
    lt_s   = $signed(a_i) < $signed(b_i);
    lt_u   = a_i < b_i;
    // a shift by 32 gives 0 in SV, so a rotate by 0 needs no special case
    sh     = {1'b0, b_i[4:0]};
    sh_inv = 6'd32 - sh;
    quo    = '0;
    rem    = '0;
    cnt    = '0;
    p8     = '0;
    unique case (fn_i)
      VPU_ADD:     result_o = a_i + b_i;
      VPU_SUB:     result_o = a_i - b_i;
      VPU_MUL:     result_o = a_i * b_i;
      // signed divide on magnitudes
      VPU_CDIV: begin
        quo      = (b_i == '0) ? '0 : mag_a / mag_b;
        result_o = (a_i[31] ^ b_i[31]) ? -quo : quo;
      end
      VPU_CMOD: begin
        rem      = (b_i == '0) ? mag_a : mag_a % mag_b;
        result_o = a_i[31] ? -rem : rem;
      end
      VPU_NEG:     result_o = -a_i;
      VPU_ABS:     result_o = mag_a;
      VPU_SIGN:    result_o = a_i[31] ? '1 : {31'd0, a_i != '0};
      VPU_RELU:    result_o = a_i[31] ? '0 : a_i;
      VPU_MAX:     result_o = lt_s ? b_i : a_i;
      VPU_MIN:     result_o = lt_s ? a_i : b_i;
      VPU_MAXU:    result_o = lt_u ? b_i : a_i;
      VPU_MINU:    result_o = lt_u ? a_i : b_i;
      VPU_SATADD:  result_o = sat32(sum33);
      VPU_SATSUB:  result_o = sat32(diff33);
      VPU_ABSDIFF: result_o = (absdiff > 33'(INT_MAX)) ? INT_MAX : absdiff[31:0];
      VPU_CMPLT:   result_o = {31'd0, lt_s};
      VPU_CMPLTU:  result_o = {31'd0, lt_u};
      VPU_CMPEQ:   result_o = {31'd0, a_i == b_i};
      VPU_CMPNE:   result_o = {31'd0, a_i != b_i};
      VPU_AND:     result_o = a_i & b_i;
      VPU_OR:      result_o = a_i | b_i;
      VPU_XOR:     result_o = a_i ^ b_i;
      VPU_NOT:     result_o = ~a_i;
      VPU_SHL:     result_o = a_i << b_i[4:0];
      VPU_SHR:     result_o = a_i >> b_i[4:0];
      VPU_SRA:     result_o = $unsigned($signed(a_i) >>> b_i[4:0]);
      VPU_ROTL:    result_o = (a_i << sh) | (a_i >> sh_inv);
      VPU_ROTR:    result_o = (a_i >> sh) | (a_i << sh_inv);
      VPU_CLZ: begin
        cnt = 6'd32;
        for (int i = 0; i < 32; i++) begin
          if (a_i[i]) cnt = 6'(31 - i);
        end
        result_o = {26'd0, cnt};
      end
      VPU_CTZ: begin
        cnt = 6'd32;
        for (int i = 31; i >= 0; i--) begin
          if (a_i[i]) cnt = 6'(i);
        end
        result_o = {26'd0, cnt};
      end
      VPU_POPCNT:  result_o = 32'($countones(a_i));
      VPU_BREV8:   result_o = {a_i[7:0], a_i[15:8], a_i[23:16], a_i[31:24]};
      VPU_SEXT8:   result_o = {{24{a_i[7]}}, a_i[7:0]};
      VPU_SEXT16:  result_o = {{16{a_i[15]}}, a_i[15:0]};
      VPU_ZEXT8:   result_o = {24'd0, a_i[7:0]};
      VPU_ZEXT16:  result_o = {16'd0, a_i[15:0]};
      // packed int8: each byte on its own, signed
      VPU_P8ADD, VPU_P8SUB, VPU_P8MAX, VPU_P8MIN, VPU_P8NEG, VPU_P8RELU, VPU_P8ABS, VPU_P8SIGN,
      VPU_P8CMPLT, VPU_P8CMPEQ, VPU_P8MULLO, VPU_P8MULHI, VPU_P8ABSDIFF: begin
        for (int i = 0; i < 4; i++) p8[8*i +: 8] = p8_byte(fn_i, a_i[8*i +: 8], b_i[8*i +: 8]);
        result_o = p8;
      end
      VPU_SEL:     result_o = (c_i != '0) ? a_i : b_i;
      VPU_MAC:     result_o = a_i * b_i + c_i;
      default:     result_o = '0;
    endcase
  end

  // clamp an exact 33-bit signed value to int32
  function automatic logic [31:0] sat32(input logic [32:0] v);
    logic [31:0] res;
    if (v[32] == v[31]) res = v[31:0];
    else res = v[32] ? INT_MIN : INT_MAX;
    return res;
  endfunction

  // clamp an exact 10-bit signed value to int8
  function automatic logic [7:0] sat8(input logic [9:0] v);
    logic [7:0] res;
    if ($signed(v) > 10'sd127) res = 8'h7f;
    else if ($signed(v) < -10'sd128) res = 8'h80;
    else res = v[7:0];
    return res;
  endfunction

  function automatic logic [7:0] p8_byte(input vpu_fn_e fn, input logic [7:0] x, input logic [7:0] y);
    logic [9:0] xs, ys, ad;
    logic [15:0] prod;
    logic [7:0] res;
    xs = {{2{x[7]}}, x};
    ys = {{2{y[7]}}, y};
    ad = xs - ys;
    if (ad[9]) ad = -ad;
    prod = {{8{x[7]}}, x} * {{8{y[7]}}, y};  // the low 16 bits of the signed product
    unique case (fn)
      VPU_P8ADD:     res = sat8(xs + ys);
      VPU_P8SUB:     res = sat8(xs - ys);
      VPU_P8MAX:     res = ($signed(x) < $signed(y)) ? y : x;
      VPU_P8MIN:     res = ($signed(x) < $signed(y)) ? x : y;
      VPU_P8NEG:     res = sat8(-xs);
      VPU_P8RELU:    res = x[7] ? 8'h00 : x;
      VPU_P8ABS:     res = sat8(x[7] ? -xs : xs);
      VPU_P8SIGN:    res = x[7] ? 8'hff : {7'd0, x != '0};
      VPU_P8CMPLT:   res = ($signed(x) < $signed(y)) ? 8'hff : 8'h00;
      VPU_P8CMPEQ:   res = (x == y) ? 8'hff : 8'h00;
      VPU_P8MULLO:   res = prod[7:0];
      VPU_P8MULHI:   res = prod[15:8];
      VPU_P8ABSDIFF: res = sat8(ad);
      default:       res = 8'h00;
    endcase
    return res;
  endfunction

endmodule
