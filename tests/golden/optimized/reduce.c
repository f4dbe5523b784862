#include <math.h>
#include <stdbool.h>
typedef float float8 __attribute__((vector_size(32)));
typedef float float8_u __attribute__((vector_size(32), aligned(4)));
typedef int int8 __attribute__((vector_size(32)));
void r_64_4_8_2(float* restrict data0, const float* restrict data1, const float* restrict data2) {
  for (int gidx0 = 0; gidx0 < 64; gidx0++) {
    float8 acc4 = ((float8){}+0.0f);
    for (int ridx0 = 0; ridx0 < 4; ridx0++) {
      float8 val6 = *((float8_u*)(data1+(gidx0*64+ridx0*16)));
      float8 val7 = *((float8_u*)(data2+(gidx0*64+ridx0*16)));
      float8 alu8 = (val6*val7);
      acc4 = (acc4+alu8);
      float8 val10 = *((float8_u*)(data1+(gidx0*64+ridx0*16+8)));
      float8 val11 = *((float8_u*)(data2+(gidx0*64+ridx0*16+8)));
      float8 alu12 = (val10*val11);
      acc4 = (acc4+alu12);
    }
    float red15 = acc4[0];
    for (int lane = 1; lane < 8; lane++) red15 = (red15+acc4[lane]);
    float alu16 = sqrtf(red15);
    data0[gidx0] = alu16;
  }
}
