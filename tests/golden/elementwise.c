#include <math.h>
#include <stdbool.h>
void E_64(float* restrict data0, const float* restrict data1, const float* restrict data2) {
  for (int gidx0 = 0; gidx0 < 64; gidx0++) {
    float val7 = data1[gidx0];
    float val8 = data2[gidx0];
    float alu9 = (val7+val8);
    float alu10 = (alu9*2.0f);
    bool alu11 = (0.0f<alu10);
    bool alu12 = (alu10!=alu10);
    float alu13 = (alu12?alu10:0.0f);
    float alu14 = (alu11?alu10:alu13);
    float alu15 = (alu14*1.4426950408889634f);
    float alu16 = exp2f(alu15);
    data0[gidx0] = alu16;
  }
}
