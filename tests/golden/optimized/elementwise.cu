extern "C" __global__ void E_16_256(float* __restrict__ data0, const float* __restrict__ data1, const float* __restrict__ data2) {
  int gidx0 = blockIdx.x;
  int lidx0 = threadIdx.x;
  float val8 = data1[(gidx0*256+lidx0)];
  float val9 = data2[(gidx0*256+lidx0)];
  float alu10 = (val8+val9);
  float alu11 = (alu10*2.0f);
  bool alu12 = (0.0f<alu11);
  bool alu13 = (alu11!=alu11);
  float alu14 = (alu13?alu11:0.0f);
  float alu15 = (alu12?alu11:alu14);
  float alu16 = (alu15*1.4426950408889634f);
  float alu17 = exp2f(alu16);
  data0[(gidx0*256+lidx0)] = alu17;
}
