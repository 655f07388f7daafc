// The tile-wide fp32 functions of the VPU: FSUM/FMAX/FMIN/FPROD reductions over a ROW, a COL or the
// whole TILE in the documented pairwise tree order (neighbours first, each step rounded; TILE
// reduces every row, then the row results), FARGMAX_ROW/FARGMIN_ROW (first index of the extreme;
// a NaN counts as the extreme, like numpy) and FROTPAIR (lane pairs (2p, 2p+1) rotated by
// c = b[2p], s = b[2p+1]: x0*c - x1*s and x0*s + x1*c, each product and the sum rounded).
// N row trees serve ROW and (on the transposed tile) COL; one more tree over the row results gives
// TILE. Purely combinational (latency 0): vpu.sv registers the result and delays it to the
// documented latency (4 for ROW/COL, 6 for TILE, 2 for FROTPAIR and FARG*). Other functions give 0.
module vpu_fp_reduce
  import tinytpu_pkg::*;
#(
  parameter int unsigned N = 4
) (
  input  vpu_fn_e                fn_i,
  input  logic [N*N-1:0][31:0]   a_i,
  input  logic [N*N-1:0][31:0]   b_i,
  output logic [N*N-1:0][31:0]   result_o
);

  localparam int unsigned L = N * N;
  localparam int unsigned IW = $clog2(N);

  // reduction kind (as fp32_redop) and scope
  logic [1:0] op;
  logic is_col, is_tile;
  always_comb begin
    unique case (fn_i)
      VPU_FMAX_ROW, VPU_FMAX_COL, VPU_FMAX_TILE:    op = 2'd1;
      VPU_FMIN_ROW, VPU_FMIN_COL, VPU_FMIN_TILE:    op = 2'd2;
      VPU_FPROD_ROW, VPU_FPROD_COL, VPU_FPROD_TILE: op = 2'd3;
      default:                                      op = 2'd0;
    endcase
  end
  assign is_col  = fn_i inside {VPU_FSUM_COL, VPU_FMAX_COL, VPU_FMIN_COL, VPU_FPROD_COL};
  assign is_tile = fn_i inside {VPU_FSUM_TILE, VPU_FMAX_TILE, VPU_FMIN_TILE, VPU_FPROD_TILE};

  // tree i reduces row i, or column i for COL
  logic [N-1:0][31:0] line_res;
  for (genvar i = 0; i < N; i++) begin : g_line
    logic [N-1:0][31:0] x;
    for (genvar j = 0; j < N; j++) begin : g_x
      assign x[j] = is_col ? a_i[j*N + i] : a_i[i*N + j];
    end
    fp32_tree #(.N(N)) u_tree (.op_i(op), .x_i(x), .result_o(line_res[i]));
  end

  logic [31:0] tile_res;
  fp32_tree #(.N(N)) u_tile (.op_i(op), .x_i(line_res), .result_o(tile_res));

  // first index of the row maximum/minimum: a later element wins only if strictly beyond the
  // current best, and a NaN beats everything unless the best already is a NaN
  logic is_argmin;
  logic [N-1:0][IW-1:0] arg;
  assign is_argmin = fn_i == VPU_FARGMIN_ROW;
  always_comb begin
    for (int unsigned r = 0; r < N; r++) begin
      logic [31:0] best, x;
      logic take;
      best = a_i[r*N];
      arg[r] = '0;
      for (int unsigned j = 1; j < N; j++) begin
        x = a_i[r*N + j];
        if (is_nan(best[30:0])) take = 1'b0;
        else if (is_nan(x[30:0])) take = 1'b1;
        else take = is_argmin ? flt(x, best) : flt(best, x);
        if (take) begin
          best = x;
          arg[r] = IW'(j);
        end
      end
    end
  end

  // FROTPAIR: four rounded products, then a rounded difference and a rounded sum per pair
  logic [L-1:0][31:0] rot_res;
  for (genvar p = 0; p < L / 2; p++) begin : g_pair
    logic [31:0] x0c, x1s, x0s, x1c;
    fp32_mul u_x0c (.a_i(a_i[2*p]),   .b_i(b_i[2*p]),   .result_o(x0c));
    fp32_mul u_x1s (.a_i(a_i[2*p+1]), .b_i(b_i[2*p+1]), .result_o(x1s));
    fp32_mul u_x0s (.a_i(a_i[2*p]),   .b_i(b_i[2*p+1]), .result_o(x0s));
    fp32_mul u_x1c (.a_i(a_i[2*p+1]), .b_i(b_i[2*p]),   .result_o(x1c));
    fp32_add u_out0 (.a_i(x0c), .b_i(x1s ^ 32'h8000_0000), .result_o(rot_res[2*p]));
    fp32_add u_out1 (.a_i(x0s), .b_i(x1c), .result_o(rot_res[2*p+1]));
  end

  always_comb begin
    for (int unsigned r = 0; r < N; r++) begin
      for (int unsigned c = 0; c < N; c++) begin
        unique case (fn_i)
          VPU_FSUM_ROW, VPU_FMAX_ROW, VPU_FMIN_ROW, VPU_FPROD_ROW,
          VPU_FSUM_COL, VPU_FMAX_COL, VPU_FMIN_COL, VPU_FPROD_COL,
          VPU_FSUM_TILE, VPU_FMAX_TILE, VPU_FMIN_TILE, VPU_FPROD_TILE:
            result_o[r*N + c] = is_tile ? tile_res : (is_col ? line_res[c] : line_res[r]);
          VPU_FARGMAX_ROW, VPU_FARGMIN_ROW: result_o[r*N + c] = 32'(arg[r]);
          VPU_FROTPAIR:                     result_o[r*N + c] = rot_res[r*N + c];
          default:                          result_o[r*N + c] = '0;
        endcase
      end
    end
  end

  function automatic logic is_nan(logic [30:0] v);  // the sign bit does not matter
    return (v[30:23] == 8'hff) && (v[22:0] != '0);
  endfunction

  // ordered a < b for non-NaN values, -0 == +0
  function automatic logic flt(logic [31:0] a, logic [31:0] b);
    logic [31:0] ka, kb;
    if (a[30:0] == '0 && b[30:0] == '0) return 1'b0;
    ka = a[31] ? ~a : {1'b1, a[30:0]};
    kb = b[31] ? ~b : {1'b1, b[30:0]};
    return ka < kb;
  endfunction

endmodule
