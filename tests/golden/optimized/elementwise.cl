__kernel void E_16_256(__global float* restrict data0, __global const float* restrict data1, __global const float* restrict data2) {
  int gidx0 = get_group_id(0);
  int lidx0 = get_local_id(0);
  float val8 = data1[(gidx0*256+lidx0)];
  float val9 = data2[(gidx0*256+lidx0)];
  float alu10 = (val8+val9);
  float alu11 = (alu10*2.0f);
  bool alu12 = (0.0f<alu11);
  bool alu13 = (alu11!=alu11);
  float alu14 = (alu13?alu11:0.0f);
  float alu15 = (alu12?alu11:alu14);
  float alu16 = (alu15*1.4426950408889634f);
  float alu17 = exp2(alu16);
  data0[(gidx0*256+lidx0)] = alu17;
}
