// Whole-tile integer VPU functions: SUM/MAX/MIN/PROD over ROW/COL/TILE (int32 wrap, signed
// MAX/MIN), ARGMAX_ROW/ARGMIN_ROW (first index of the signed extreme) and IROTPAIR (int32 RoPE on
// lane pairs (2p, 2p+1) with c = b[2p], s = b[2p+1]). Lane r*N+c of a tile is row r, column c.
// Purely combinational (latency 0): vpu.sv registers the result (these functions have latency 1).
// Integer reductions are associative, so rows and columns are folded in plain index order and the
// tile result folds the row results. Functions it does not implement give 0.
module vpu_int_reduce
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

  typedef enum logic [1:0] {RED_SUM, RED_MAX, RED_MIN, RED_PROD} red_e;

  function automatic logic [31:0] combine(input red_e op, input logic [31:0] x, input logic [31:0] y);
    logic [31:0] res;
    unique case (op)
      RED_SUM:  res = x + y;
      RED_MAX:  res = ($signed(x) < $signed(y)) ? y : x;
      RED_MIN:  res = ($signed(y) < $signed(x)) ? y : x;
      RED_PROD: res = x * y;
      default:  res = x;
    endcase
    return res;
  endfunction

  red_e op;
  always_comb begin
    unique case (fn_i)
      VPU_MAX_ROW, VPU_MAX_COL, VPU_MAX_TILE:    op = RED_MAX;
      VPU_MIN_ROW, VPU_MIN_COL, VPU_MIN_TILE:    op = RED_MIN;
      VPU_PROD_ROW, VPU_PROD_COL, VPU_PROD_TILE: op = RED_PROD;
      default:                                   op = RED_SUM;
    endcase
  end

  logic [N-1:0][31:0] row_red, col_red;
  logic [31:0] tile_red;
  // each block computes only for its own functions (a simulator skips it otherwise)
  always_comb begin
    row_red  = '0;
    col_red  = '0;
    tile_red = '0;
    if (fn_i inside {VPU_SUM_ROW, VPU_MAX_ROW, VPU_MIN_ROW, VPU_PROD_ROW, VPU_SUM_COL, VPU_MAX_COL,
                     VPU_MIN_COL, VPU_PROD_COL, VPU_SUM_TILE, VPU_MAX_TILE, VPU_MIN_TILE,
                     VPU_PROD_TILE}) begin
      for (int r = 0; r < N; r++) begin
        row_red[r] = a_i[r*N];
        for (int c = 1; c < N; c++) row_red[r] = combine(op, row_red[r], a_i[r*N+c]);
      end
      for (int c = 0; c < N; c++) begin
        col_red[c] = a_i[c];
        for (int r = 1; r < N; r++) col_red[c] = combine(op, col_red[c], a_i[r*N+c]);
      end
      tile_red = row_red[0];
      for (int r = 1; r < N; r++) tile_red = combine(op, tile_red, row_red[r]);
    end
  end

  // first index of the extreme: only a strictly better element replaces the current best
  localparam int unsigned IDX_W = (N > 1) ? $clog2(N) : 1;
  logic [N-1:0][IDX_W-1:0] arg_idx;
  logic [31:0] best;
  always_comb begin
    arg_idx = '0;
    best    = '0;
    if (fn_i inside {VPU_ARGMAX_ROW, VPU_ARGMIN_ROW}) begin
      for (int r = 0; r < N; r++) begin
        best = a_i[r*N];
        arg_idx[r] = '0;
        for (int c = 1; c < N; c++) begin
          if (fn_i == VPU_ARGMIN_ROW ? $signed(a_i[r*N+c]) < $signed(best)
                                     : $signed(a_i[r*N+c]) > $signed(best)) begin
            best = a_i[r*N+c];
            arg_idx[r] = IDX_W'(c);
          end
        end
      end
    end
  end

  logic [L-1:0][31:0] rot;
  always_comb begin
    rot = '0;
    if (fn_i == VPU_IROTPAIR) begin
      for (int p = 0; p < L / 2; p++) begin
        rot[2*p]   = a_i[2*p] * b_i[2*p] - a_i[2*p+1] * b_i[2*p+1];
        rot[2*p+1] = a_i[2*p] * b_i[2*p+1] + a_i[2*p+1] * b_i[2*p];
      end
    end
  end

  always_comb begin
    for (int i = 0; i < L; i++) begin
      unique case (fn_i)
        VPU_SUM_ROW, VPU_MAX_ROW, VPU_MIN_ROW, VPU_PROD_ROW:     result_o[i] = row_red[i / N];
        VPU_SUM_COL, VPU_MAX_COL, VPU_MIN_COL, VPU_PROD_COL:     result_o[i] = col_red[i % N];
        VPU_SUM_TILE, VPU_MAX_TILE, VPU_MIN_TILE, VPU_PROD_TILE: result_o[i] = tile_red;
        VPU_ARGMAX_ROW, VPU_ARGMIN_ROW:                          result_o[i] = 32'(arg_idx[i / N]);
        VPU_IROTPAIR:                                            result_o[i] = rot[i];
        default:                                                 result_o[i] = '0;
      endcase
    end
  end

endmodule
