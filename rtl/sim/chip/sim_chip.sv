// sim_chip: the co-simulation top of the two-core chip (doc/chip.md). rtl/chip.sv plus the loader
// of rtl/sim/sim_top.sv generalised to cores: it asks the C++ side (tinytpu_chip.cpp, DPI-C) for
// the next record of any core, writes it through that core's load ports (one record a cycle),
// starts both cores in the same cycle, waits until every core is done or the watchdog fires,
// reads back every requested dump of every core, and reports per core its status, pc, cycles and
// counters, and the chip's error flag. The HBM store is the C++ one (rtl/sim/hbm_store.cpp):
// preloaded before and dumped after the run, as in sim_top.
//
// Watchdog: `run <limit>` counts chip cycles from the start; when it fires, a core that is not
// done reports `timeout` at its pc (where it waits: the C++ side names a SIG.WAIT there).
module sim_chip
  import tinytpu_pkg::*;
#(
  parameter int unsigned N                = 4,
  parameter int unsigned VMEM_TILES       = 1024,
  parameter int unsigned PSUM_TILES       = 64,
  parameter int unsigned IMEM_WORDS       = 4096,
  parameter int unsigned HBM_TILES        = 1 << 20,
  parameter int unsigned HBM_LATENCY      = 100,
  parameter int unsigned HBM_BW_NUM       = 1,
  parameter int unsigned HBM_BW_DEN       = 1,
  parameter int unsigned NOC_NODES        = 4,
  parameter int unsigned NOC_LINK_LATENCY = 2
) (
  input  logic clk_i,
  input  logic rst_ni,
  output logic finished_o
);
  localparam int unsigned CORES   = 2;
  localparam int unsigned L       = N * N;
  localparam int unsigned IMEM_AW = $clog2(IMEM_WORDS);
  localparam int unsigned VA_W    = $clog2(VMEM_TILES);
  localparam int unsigned PA_W    = $clog2(PSUM_TILES);
  localparam int unsigned RD_WAIT = 4;
  localparam int K_NONE = 0, K_IMEM = 1, K_VMEM = 2, K_PSUM = 3, K_SREG = 4;

  import "DPI-C" function int tc_load_next();    // kind of the next preload of any core, K_NONE at the end
  import "DPI-C" function int tc_load_core();
  import "DPI-C" function int tc_load_addr();
  import "DPI-C" function longint unsigned tc_load_word();
  import "DPI-C" function int unsigned tc_load_lane(input int lane);
  import "DPI-C" function longint tc_max_cycles();
  import "DPI-C" function int tc_dump_next();
  import "DPI-C" function int tc_dump_core();
  import "DPI-C" function int tc_dump_addr();
  import "DPI-C" function void tc_dump_lane(input int lane, input int unsigned value);
  import "DPI-C" function void tc_report(input int core, input int status, input int pc, input int unsigned cycles, input int timeout);
  import "DPI-C" function void tc_report_perf(input int core, input int idx, input int unsigned value);
  import "DPI-C" function void tc_report_chip(input longint unsigned cycles, input int err);

  typedef enum logic [2:0] {S_INIT, S_LOAD, S_RUN, S_DUMP, S_READ, S_REPORT, S_FIN} state_e;

  state_e             state_q;
  logic [CORES-1:0]   imem_we_q, vmem_we_q, psum_we_q, sreg_we_q;
  logic               start_q, timeout_q;
  logic [31:0]        addr_q;
  logic [63:0]        word_q;
  logic [L-1:0][31:0] tile_q;
  logic [63:0]        wd_q;
  int                 dkind_q;
  logic               dcore_q;    // the core of the dump being read
  logic [3:0]         wait_q;

  logic [CORES-1:0]                     ready, running, done;
  trap_e [CORES-1:0]                    status;
  logic [CORES-1:0][31:0]               pc, cycles, sreg_rdata;
  logic [CORES-1:0][NUM_PERF-1:0][31:0] perf;
  logic [CORES-1:0][L-1:0][31:0]        vmem_rdata, psum_rdata;
  logic                                 err;

  chip #(
    .N(N), .VMEM_TILES(VMEM_TILES), .PSUM_TILES(PSUM_TILES), .IMEM_WORDS(IMEM_WORDS), .HBM_TILES(HBM_TILES),
    .HBM_LATENCY(HBM_LATENCY), .HBM_BW_NUM(HBM_BW_NUM), .HBM_BW_DEN(HBM_BW_DEN), .NOC_NODES(NOC_NODES),
    .NOC_LINK_LATENCY(NOC_LINK_LATENCY)
  ) u_chip (
    .clk_i,
    .rst_ni,
    .imem_we_i    (imem_we_q),
    .imem_addr_i  (IMEM_AW'(addr_q)),
    .imem_wdata_i (word_q),
    .vmem_we_i    (vmem_we_q),
    .vmem_addr_i  (VA_W'(addr_q)),
    .vmem_wdata_i (tile_q),
    .vmem_rdata_o (vmem_rdata),
    .psum_we_i    (psum_we_q),
    .psum_addr_i  (PA_W'(addr_q)),
    .psum_wdata_i (tile_q),
    .psum_rdata_o (psum_rdata),
    .sreg_we_i    (sreg_we_q),
    .sreg_addr_i  (addr_q[3:0]),
    .sreg_wdata_i (word_q[31:0]),
    .sreg_rdata_o (sreg_rdata),
    .start_i      ({CORES{start_q}}),
    .ready_o      (ready),
    .running_o    (running),
    .done_o       (done),
    .status_o     (status),
    .pc_o         (pc),
    .cycles_o     (cycles),
    .perf_o       (perf),
    .err_o        (err)
  );

  `include "assert.svh"
  `ASSERT(ChipNoError, !err)

  assign finished_o = state_q == S_FIN;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q   <= S_INIT;
      imem_we_q <= '0;
      vmem_we_q <= '0;
      psum_we_q <= '0;
      sreg_we_q <= '0;
      start_q   <= 1'b0;
      addr_q    <= '0;
      word_q    <= '0;
      tile_q    <= '0;
      wd_q      <= '0;
      timeout_q <= 1'b0;
      dkind_q   <= K_NONE;
      dcore_q   <= 1'b0;
      wait_q    <= '0;
    end else begin
      imem_we_q <= '0;
      vmem_we_q <= '0;
      psum_we_q <= '0;
      sreg_we_q <= '0;
      start_q   <= 1'b0;
      unique case (state_q)
        S_INIT: if (&ready) state_q <= S_LOAD;
        S_LOAD: begin
          int k, c;
          k = tc_load_next();
          c = tc_load_core();
          addr_q <= 32'(tc_load_addr());
          word_q <= tc_load_word();
          if (k == K_VMEM || k == K_PSUM) begin
            for (int i = 0; i < L; i++) tile_q[i] <= tc_load_lane(i);
          end
          imem_we_q <= (k == K_IMEM) ? CORES'(1 << c) : '0;
          vmem_we_q <= (k == K_VMEM) ? CORES'(1 << c) : '0;
          psum_we_q <= (k == K_PSUM) ? CORES'(1 << c) : '0;
          sreg_we_q <= (k == K_SREG) ? CORES'(1 << c) : '0;
          if (k == K_NONE) begin
            start_q <= 1'b1;
            wd_q    <= '0;
            state_q <= S_RUN;
          end
        end
        S_RUN: begin
          wd_q <= wd_q + 64'd1;
          if (!start_q && &done) begin
            state_q <= S_DUMP;
          end else if (!start_q && $signed(wd_q) >= tc_max_cycles()) begin
            timeout_q <= 1'b1;
            state_q   <= S_DUMP;
          end
        end
        S_DUMP: begin
          int k;
          k = tc_dump_next();
          dkind_q <= k;
          dcore_q <= tc_dump_core() != 0;
          addr_q  <= 32'(tc_dump_addr());
          wait_q  <= 4'(RD_WAIT);
          state_q <= k == K_NONE ? S_REPORT : S_READ;
        end
        S_READ: begin
          if (wait_q != 0) begin
            wait_q <= wait_q - 4'd1;
          end else begin
            for (int i = 0; i < L; i++) begin
              if (dkind_q == K_VMEM) tc_dump_lane(i, vmem_rdata[dcore_q][i]);
              else if (dkind_q == K_PSUM) tc_dump_lane(i, psum_rdata[dcore_q][i]);
            end
            if (dkind_q == K_SREG) begin
              tc_dump_lane(int'(addr_q), sreg_rdata[dcore_q]);
              if (addr_q == 32'd15) state_q <= S_DUMP;
              else begin
                addr_q <= addr_q + 32'd1;
                wait_q <= 4'd1;
              end
            end else begin
              state_q <= S_DUMP;
            end
          end
        end
        S_REPORT: begin
          for (int c = 0; c < int'(CORES); c++) begin
            for (int i = 0; i < NUM_PERF; i++) tc_report_perf(c, i, perf[c][i]);
            tc_report(c, int'(status[c]), int'(pc[c]), cycles[c], int'(timeout_q && !done[c]));
          end
          tc_report_chip(wd_q, int'(err));
          state_q <= S_FIN;
        end
        default: ;
      endcase
    end
  end

  logic unused;
  assign unused = ^running;
endmodule
