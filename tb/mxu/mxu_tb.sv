// mxu_tb: test harness for the MXU unit env: mxu with its own vmem and psum, plus the core-side
// memory ports so the testbench preloads VMEM/PSUM and reads PSUM back. Every signal the env
// watches is a port here (the MXU's PSUM write port, busy, row, stall, errors).
module mxu_tb
  import tinytpu_pkg::*;
#(
  parameter int unsigned N          = 4,
  parameter int unsigned VMEM_TILES = 256,
  parameter int unsigned PSUM_TILES = 64
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,
  output logic                 init_done_o,
  // VMEM core write (preload)
  input  logic                 vm_we_i,
  input  logic [31:0]          vm_addr_i,
  input  logic [N*N*32-1:0]    vm_wdata_i,
  // PSUM core write (preload) and read (check)
  input  logic                 ps_we_i,
  input  logic [31:0]          ps_waddr_i,
  input  logic [N*N*32-1:0]    ps_wdata_i,
  input  logic                 ps_re_i,
  input  logic [31:0]          ps_raddr_i,
  output logic                 ps_rvalid_o,
  output logic [N*N*32-1:0]    ps_rdata_o,
  // MXU commands
  input  logic                 cmd_valid_i,
  output logic                 cmd_ready_o,
  input  logic                 cmd_mlw_i,
  input  logic [N*N*32-1:0]    cmd_w_i,
  input  logic [31:0]          cmd_paddr_i,
  input  logic [31:0]          cmd_vaddr_i,
  input  logic [7:0]           cmd_t_i,
  input  logic                 cmd_acc_i,
  input  logic                 cmd_bf16_i,
  output logic                 err_o,
  // observed
  output logic                 psum_we_o,
  output logic                 psum_acc_o,
  output logic                 psum_fp_o,
  output logic [31:0]          psum_addr_o,
  output logic [$clog2(N)-1:0] psum_row_o,
  output logic [N*32-1:0]      psum_wdata_o,
  output logic                 busy_o,
  output logic                 row_o,
  output logic                 stall_o,
  output logic                 vdone_o,
  output logic                 pdone_o,
  output logic                 mem_err_o  // any memory port error (none expected)
);
  logic                 vmem_req, vm_init, ps_init;
  logic [31:0]          vmem_addr;
  logic [N*N*32-1:0]    vmem_rdata, vm_rd_data, vm_dma_rdata, vm_dmr_rdata;
  logic                 vm_dma_err, vm_dmr_err;
  logic                 vm_rd_err, vm_wr_err, vm_mxu_err, ps_rd_err, ps_wr_err, ps_mxu_err, ps_rvalid_q;

  mxu #(.N(N), .VMEM_TILES(VMEM_TILES), .PSUM_TILES(PSUM_TILES)) u_mxu (
    .clk_i, .rst_ni,
    .cmd_valid_i, .cmd_ready_o, .cmd_mlw_i, .cmd_w_i, .cmd_paddr_i, .cmd_vaddr_i, .cmd_t_i, .cmd_acc_i, .cmd_bf16_i,
    .err_o,
    .vmem_req_o   (vmem_req),
    .vmem_addr_o  (vmem_addr),
    .vmem_rdata_i (vmem_rdata),
    .psum_we_o, .psum_acc_o, .psum_fp_o, .psum_addr_o, .psum_row_o, .psum_wdata_o,
    .busy_o, .row_o, .stall_o, .vdone_o, .pdone_o
  );

  vmem #(.N(N), .TILES(VMEM_TILES)) u_vmem (
    .clk_i, .rst_ni,
    .init_done_o (vm_init),
    .rd_req_i    (1'b0),
    .rd_addr_i   (32'd0),
    .rd_data_o   (vm_rd_data),
    .rd_err_o    (vm_rd_err),
    .wr_req_i    (vm_we_i),
    .wr_addr_i   (vm_addr_i),
    .wr_data_i   (vm_wdata_i),
    .wr_err_o    (vm_wr_err),
    .mxu_req_i   (vmem_req),
    .mxu_addr_i  (vmem_addr),
    .mxu_data_o  (vmem_rdata),
    .mxu_err_o   (vm_mxu_err),
    .dma_req_i   (1'b0),        // the MXU env has no DMA: its port idles
    .dma_we_i    (1'b0),
    .dma_addr_i  (32'd0),
    .dma_wdata_i ('0),
    .dma_rdata_o (vm_dma_rdata),
    .dma_err_o   (vm_dma_err),
    .dmr_req_i   (1'b0),
    .dmr_addr_i  (32'd0),
    .dmr_rdata_o (vm_dmr_rdata),
    .dmr_err_o   (vm_dmr_err)
  );

  psum #(.N(N), .TILES(PSUM_TILES)) u_psum (
    .clk_i, .rst_ni,
    .init_done_o (ps_init),
    .rd_req_i    (ps_re_i),
    .rd_addr_i   (ps_raddr_i),
    .rd_data_o   (ps_rdata_o),
    .rd_err_o    (ps_rd_err),
    .wr_req_i    (ps_we_i),
    .wr_addr_i   (ps_waddr_i),
    .wr_data_i   (ps_wdata_i),
    .wr_err_o    (ps_wr_err),
    .mxu_we_i    (psum_we_o),
    .mxu_acc_i   (psum_acc_o),
    .mxu_fp_i    (psum_fp_o),
    .mxu_addr_i  (psum_addr_o),
    .mxu_row_i   (psum_row_o),
    .mxu_data_i  (psum_wdata_o),
    .mxu_err_o   (ps_mxu_err)
  );

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) ps_rvalid_q <= 1'b0;
    else         ps_rvalid_q <= ps_re_i;
  end

  assign ps_rvalid_o = ps_rvalid_q;
  assign init_done_o = vm_init && ps_init;
  assign mem_err_o   = vm_rd_err | vm_wr_err | vm_mxu_err | vm_dma_err | vm_dmr_err | ps_rd_err | ps_wr_err | ps_mxu_err;

  logic unused;
  assign unused = ^{vm_rd_data, vm_dma_rdata, vm_dmr_rdata};
endmodule
