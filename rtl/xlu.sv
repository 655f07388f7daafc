// Cross-lane unit: lane rotations (XROT/XROTS), sublane rotations (XSROT/XSROTS), column, row and
// scalar broadcasts (XBCOL/XBROW/XBSCALAR), transpose (XTRANS) and the general in-tile gather
// (XSHUF). Lane r*N+c of a tile is row r, column c. Every function is a gather: output lane i
// reads input lane src[i], computed from fn_i, k_i, r0_i, c0_i and idx_i. N is a power of two, so
// "mod N" of the 32-bit two's complement rotate amount k_i is its low log2(N) bits and "mod N*N"
// of an XSHUF index is its low 2*log2(N) bits.
// Latency 1: an op accepted in cycle t presents result_o/tag_o with valid_o in cycle t+1. It
// accepts one op every cycle (no ready).
module xlu
  import tinytpu_pkg::*;
#(
  parameter int unsigned N     = 4,
  parameter int unsigned TAG_W = 4
) (
  input  logic                     clk_i,
  input  logic                     rst_ni,
  input  logic                     valid_i,
  input  xlu_fn_e                  fn_i,
  input  logic [N*N-1:0][31:0]     a_i,
  input  logic [N*N-1:0][31:0]     idx_i,
  input  logic [31:0]              k_i,
  input  logic [$clog2(N)-1:0]     r0_i,
  input  logic [$clog2(N)-1:0]     c0_i,
  input  logic [TAG_W-1:0]         tag_i,
  output logic                     valid_o,
  output logic [N*N-1:0][31:0]     result_o,
  output logic [TAG_W-1:0]         tag_o
);

  localparam int unsigned L  = N * N;
  localparam int unsigned LW = $clog2(N);  // bits of a row or column index
  localparam int unsigned IW = 2 * LW;     // bits of a flat lane index

  `include "assert.svh"
  // "mod N" and "mod N*N" are low bits only for a power of two
  `ASSERT_INIT(NPow2, N >= 2 && N <= 16 && (N & (N - 1)) == 0)
  // fn_i is an 8-bit field: an op must name a function of the ISA table
  `ASSERT(FnDefined, valid_i |-> 32'(fn_i) < NUM_XLU_FN)

  logic [LW-1:0] k;
  assign k = k_i[LW-1:0];
  logic unused_k_hi;
  assign unused_k_hi = ^k_i[31:LW];  // the rotate amount only matters mod N

  // source lane of every output lane
  logic [L-1:0][IW-1:0] src;
  always_comb begin
    for (int i = 0; i < L; i++) begin
      logic [LW-1:0] r, c;
      r = LW'(i / N);
      c = LW'(i % N);
      unique case (fn_i)
        XLU_ROT, XLU_ROTS:   src[i] = {r, c + k};
        XLU_SROT, XLU_SROTS: src[i] = {r + k, c};
        XLU_BCOL:            src[i] = {r, c0_i};
        XLU_BROW:            src[i] = {r0_i, c};
        XLU_BSCALAR:         src[i] = {r0_i, c0_i};
        XLU_TRANS:           src[i] = {c, r};
        XLU_SHUF:            src[i] = idx_i[i][IW-1:0];
        default:             src[i] = IW'(i);
      endcase
    end
  end

  logic [L-1:0][31:0] result_d;
  always_comb begin
    for (int i = 0; i < L; i++) begin
      `ASSERT_I(SrcInTile, 32'(src[i]) < 32'(L))
      result_d[i] = a_i[src[i]];
    end
  end

  logic                 valid_q;
  logic [L-1:0][31:0]   result_q;
  logic [TAG_W-1:0]     tag_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      valid_q  <= 1'b0;
      result_q <= '0;
      tag_q    <= '0;
    end else begin
      valid_q <= valid_i;
      if (valid_i) begin
        result_q <= result_d;
        tag_q    <= tag_i;
      end
    end
  end

  `ASSERT_KNOWN(ValidKnown, valid_o)
  `ASSERT(ResultKnown, valid_o |-> !$isunknown({tag_o, result_o}))

  assign valid_o  = valid_q;
  assign result_o = result_q;
  assign tag_o    = tag_q;

endmodule
