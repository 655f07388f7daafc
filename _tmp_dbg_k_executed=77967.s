#@ kernel r_37_5008 N=4 vmem_tiles=36 executed=77967
#@ buffer slot=0 dtype=int32 size=37 base=0 over=0,0 written
#@ buffer slot=1 dtype=int32 size=185296 base=48 over=0,3443 read
  VLD v12, [s0 + 35]
  VFILL v11, 16
  VFILL v10, 1
  LI s1, 0
  VFILL v9, 36
  LI s2, 312
  VMOV v8, v12
  LI s3, 0  # hbm slot=1
  VFILL v7, 0
  LI s4, 0
  LI s5, 0
  VMUL v6, v12, v11
  LI s6, 313
  DMA.CFG s6, 16, 1
  DMA.IN [s0 + 3], [s3 + 0], 1
  DMA.CFG s0, 1, 0
  LOOPI 313, L3
  BEQ s2, s0, L4_last
  LI s7, 16
  SSUB s7, s7, s5
  SADDI s8, s3, 1
  LI s9, 313
  DMA.CFG s9, 16, 1
  DMA.IN [s7 + 3], [s8 + 0], 1
  DMA.CFG s0, 1, 0
L4_last:
  LOOPI 2, L2
  SADD s9, s1, s4
  VGATHER v5, v6, [s9 + 48]
  SADDI s9, s1, 1
  SADD s8, s9, s4
  VADD v7, v7, v5
  VGATHER v5, v6, [s8 + 48]
  SADDI s8, s1, 2
  SADD s7, s8, s4
  VADD v7, v7, v5
  VGATHER v5, v6, [s7 + 48]
  SADDI s7, s1, 3
  SADD s6, s7, s4
  VADD v7, v7, v5
  VGATHER v5, v6, [s6 + 48]
  SADDI s6, s1, 4
  SADD s10, s6, s4
  VADD v7, v7, v5
  VGATHER v5, v6, [s10 + 48]
  SADDI s10, s1, 5
  SADD s11, s10, s4
  VADD v7, v7, v5
  VGATHER v5, v6, [s11 + 48]
  SADDI s11, s1, 6
  SADD s12, s11, s4
  VADD v7, v7, v5
  VGATHER v5, v6, [s12 + 48]
  SADDI s12, s1, 7
  SADD s13, s12, s4
  VADD v7, v7, v5
  VGATHER v5, v6, [s13 + 48]
  SADDI s1, s1, 8
  VADD v7, v7, v5
L2:
  LI s11, 16
  SSUB s11, s11, s5
  LI s12, 4
  SSUB s10, s11, s5
  SSHL s10, s10, s12
  SADD s4, s4, s10
  SADDI s3, s3, 1
  SADDI s4, s4, -16
  SADDI s5, s11, 0
  SADDI s2, s2, -1
L3:
  VADD v5, v12, v11
  LI s10, 0
  VSCATTER v7, v8, v10, [s0 + 0]
  VMOV v7, v5
  LI s11, 312
  VFILL v8, 0
  LI s12, 5008  # hbm slot=1
  LI s1, 0
  VMUL v6, v12, v11
  LI s2, 0
  LI s5, 313
  DMA.CFG s5, 16, 1
  DMA.IN [s0 + 3], [s12 + 0], 1
  DMA.CFG s0, 1, 0
  LOOPI 313, L6
  BEQ s11, s0, L7_last
  LI s4, 16
  SSUB s4, s4, s2
  SADDI s3, s12, 1
  LI s6, 313
  DMA.CFG s6, 16, 1
  DMA.IN [s4 + 3], [s3 + 0], 1
  DMA.CFG s0, 1, 0
L7_last:
  LOOPI 2, L5
  SADD s6, s10, s1
  VGATHER v4, v6, [s6 + 48]
  SADDI s6, s10, 1
  SADD s3, s6, s1
  VADD v8, v8, v4
  VGATHER v4, v6, [s3 + 48]
  SADDI s3, s10, 2
  SADD s4, s3, s1
  VADD v8, v8, v4
  VGATHER v4, v6, [s4 + 48]
  SADDI s4, s10, 3
  SADD s5, s4, s1
  VADD v8, v8, v4
  VGATHER v4, v6, [s5 + 48]
  SADDI s5, s10, 4
  SADD s7, s5, s1
  VADD v8, v8, v4
  VGATHER v4, v6, [s7 + 48]
  SADDI s7, s10, 5
  SADD s8, s7, s1
  VADD v8, v8, v4
  VGATHER v4, v6, [s8 + 48]
  SADDI s8, s10, 6
  SADD s9, s8, s1
  VADD v8, v8, v4
  VGATHER v4, v6, [s9 + 48]
  SADDI s9, s10, 7
  SADD s13, s9, s1
  VADD v8, v8, v4
  VGATHER v4, v6, [s13 + 48]
  SADDI s10, s10, 8
  VADD v8, v8, v4
L5:
  LI s8, 16
  SSUB s8, s8, s2
  LI s9, 4
  SSUB s7, s8, s2
  SSHL s7, s7, s9
  SADD s1, s1, s7
  SADDI s12, s12, 1
  SADDI s1, s1, -16
  SADDI s2, s8, 0
  SADDI s11, s11, -1
L6:
  VADD v4, v5, v11
  LI s7, 0
  VSCATTER v8, v7, v10, [s0 + 0]
  VMIN v8, v4, v9
  LI s8, 312
  VFILL v4, 0
  LI s9, 10016  # hbm slot=1
  LI s10, 0
  VMUL v9, v12, v11
  LI s11, 0
  LI s2, 313
  DMA.CFG s2, 16, 1
  DMA.IN [s0 + 3], [s9 + 0], 1
  DMA.CFG s0, 1, 0
  LOOPI 313, L9
  BEQ s8, s0, L10_last
  LI s1, 16
  SSUB s1, s1, s11
  SADDI s12, s9, 1
  LI s5, 313
  DMA.CFG s5, 16, 1
  DMA.IN [s1 + 3], [s12 + 0], 1
  DMA.CFG s0, 1, 0
L10_last:
  LOOPI 2, L8
  SADD s5, s7, s10
  VGATHER v11, v9, [s5 + 48]
  SADDI s5, s7, 1
  SADD s12, s5, s10
  VADD v4, v4, v11
  VGATHER v11, v9, [s12 + 48]
  SADDI s12, s7, 2
  SADD s1, s12, s10
  VADD v4, v4, v11
  VGATHER v11, v9, [s1 + 48]
  SADDI s1, s7, 3
  SADD s2, s1, s10
  VADD v4, v4, v11
  VGATHER v11, v9, [s2 + 48]
  SADDI s2, s7, 4
  SADD s4, s2, s10
  VADD v4, v4, v11
  VGATHER v11, v9, [s4 + 48]
  SADDI s4, s7, 5
  SADD s3, s4, s10
  VADD v4, v4, v11
  VGATHER v11, v9, [s3 + 48]
  SADDI s3, s7, 6
  SADD s6, s3, s10
  VADD v4, v4, v11
  VGATHER v11, v9, [s6 + 48]
  SADDI s6, s7, 7
  SADD s13, s6, s10
  VADD v4, v4, v11
  VGATHER v11, v9, [s13 + 48]
  SADDI s7, s7, 8
  VADD v4, v4, v11
L8:
  LI s3, 16
  SSUB s3, s3, s11
  LI s6, 4
  SSUB s4, s3, s11
  SSHL s4, s4, s6
  SADD s10, s10, s4
  SADDI s9, s9, 1
  SADDI s10, s10, -16
  SADDI s11, s3, 0
  SADDI s8, s8, -1
L9:
  VSCATTER v4, v8, v10, [s0 + 0]
L1:
  LI s4, 0  # hbm slot=0
  DMA.OUT [s4 + 0], [s0 + 0], 3
  HALT
.vmem 35 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15
