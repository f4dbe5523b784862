#include <math.h>
#include <stdbool.h>
void r_8_8_8(float* restrict data0, const float* restrict data1, const float* restrict data2) {
  for (int gidx0 = 0; gidx0 < 8; gidx0++) {
    for (int gidx1 = 0; gidx1 < 8; gidx1++) {
      float acc5 = 0.0f;
      for (int ridx0 = 0; ridx0 < 8; ridx0++) {
        float val7 = data1[(gidx0*8+ridx0)];
        float val8 = data2[(gidx1+ridx0*8)];
        float alu9 = (val7*val8);
        acc5 = (acc5+alu9);
      }
      data0[(gidx0*8+gidx1)] = acc5;
    }
  }
}
