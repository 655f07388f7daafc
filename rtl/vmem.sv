// vmem: the unified scratchpad, TILES tiles of N x N 32-bit lanes (lane [r][c] at bits
// (r*N+c)*32 +: 32), with three independent ports: core read, core write, MXU read.
// Reads are synchronous: data (and err) appear the cycle after the request; a read and a write
// of the same tile in the same cycle return the old data. Every port checks its 32-bit tile
// address: an access outside [0, TILES) does not write, reads as zero and raises that port's
// err the next cycle (never masked or wrapped). After reset a clear sweep writes zero to every
// tile (one per cycle, TILES cycles); init_done_o rises when it ends, and an access before that
// is refused with err.
// Latency: 1 cycle on every port; one tile per cycle per port.
module vmem
  import tinytpu_pkg::*;
#(
  parameter int unsigned N     = 4,
  parameter int unsigned TILES = 1024
) (
  input  logic               clk_i,
  input  logic               rst_ni,
  output logic               init_done_o,
  // core read
  input  logic               rd_req_i,
  input  logic [31:0]        rd_addr_i,
  output logic [N*N*32-1:0]  rd_data_o,
  output logic               rd_err_o,
  // core write
  input  logic               wr_req_i,
  input  logic [31:0]        wr_addr_i,
  input  logic [N*N*32-1:0]  wr_data_i,
  output logic               wr_err_o,
  // MXU read
  input  logic               mxu_req_i,
  input  logic [31:0]        mxu_addr_i,
  output logic [N*N*32-1:0]  mxu_data_o,
  output logic               mxu_err_o
);
  localparam int unsigned AW = $clog2(TILES);

  logic [N*N*32-1:0] mem_q [TILES];
  logic [AW:0]       init_q;  // clear sweep position; TILES when done
  logic              ready, rd_ok, wr_ok, mxu_ok;

  assign ready  = init_q[AW];
  assign rd_ok  = ready && rd_addr_i < 32'(TILES);
  assign wr_ok  = ready && wr_addr_i < 32'(TILES);
  assign mxu_ok = ready && mxu_addr_i < 32'(TILES);

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) init_q <= '0;
    else if (!ready) init_q <= init_q + 1'b1;
  end

  // the storage itself has no reset: the sweep clears it
  always_ff @(posedge clk_i) begin
    if (!ready) mem_q[init_q[AW-1:0]] <= '0;
    else if (wr_req_i && wr_ok) mem_q[wr_addr_i[AW-1:0]] <= wr_data_i;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rd_data_o  <= '0;
      mxu_data_o <= '0;
      rd_err_o   <= 1'b0;
      wr_err_o   <= 1'b0;
      mxu_err_o  <= 1'b0;
    end else begin
      rd_data_o  <= rd_req_i && rd_ok ? mem_q[rd_addr_i[AW-1:0]] : '0;
      mxu_data_o <= mxu_req_i && mxu_ok ? mem_q[mxu_addr_i[AW-1:0]] : '0;
      rd_err_o   <= rd_req_i && !rd_ok;
      wr_err_o   <= wr_req_i && !wr_ok;
      mxu_err_o  <= mxu_req_i && !mxu_ok;
    end
  end

  assign init_done_o = ready;
endmodule
