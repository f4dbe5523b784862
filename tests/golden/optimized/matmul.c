#include <math.h>
#include <stdbool.h>
typedef float float8 __attribute__((vector_size(32)));
typedef float float8_u __attribute__((vector_size(32), aligned(4)));
typedef int int8 __attribute__((vector_size(32)));
void r_16_4_64_8_2_4(float* restrict data0, const float* restrict data1, const float* restrict data2) {
  #pragma omp parallel for num_threads(4)
  for (int gidx0 = 0; gidx0 < 16; gidx0++) {
    for (int gidx1 = 0; gidx1 < 4; gidx1++) {
      float8 acc5 = ((float8){}+0.0f);
      float8 acc6 = ((float8){}+0.0f);
      float8 acc7 = ((float8){}+0.0f);
      float8 acc8 = ((float8){}+0.0f);
      float8 acc9 = ((float8){}+0.0f);
      float8 acc10 = ((float8){}+0.0f);
      float8 acc11 = ((float8){}+0.0f);
      float8 acc12 = ((float8){}+0.0f);
      for (int ridx0 = 0; ridx0 < 64; ridx0++) {
        float val14 = data1[(gidx0*256+ridx0)];
        float8 val15 = *((float8_u*)(data2+(gidx1*16+ridx0*64)));
        __asm__("" : "+x"(val15));  // one load, held in a register
        float8 alu16 = ((val14-(float8){})*val15);
        acc5 = (acc5+alu16);
        float val18 = data1[(gidx0*256+ridx0+64)];
        float8 alu19 = ((val18-(float8){})*val15);
        acc6 = (acc6+alu19);
        float val21 = data1[(gidx0*256+ridx0+128)];
        float8 alu22 = ((val21-(float8){})*val15);
        acc7 = (acc7+alu22);
        float val24 = data1[(gidx0*256+ridx0+192)];
        float8 alu25 = ((val24-(float8){})*val15);
        acc8 = (acc8+alu25);
        float8 val27 = *((float8_u*)(data2+(gidx1*16+ridx0*64+8)));
        __asm__("" : "+x"(val27));  // one load, held in a register
        float8 alu28 = ((val14-(float8){})*val27);
        acc9 = (acc9+alu28);
        float8 alu30 = ((val18-(float8){})*val27);
        acc10 = (acc10+alu30);
        float8 alu32 = ((val21-(float8){})*val27);
        acc11 = (acc11+alu32);
        float8 alu34 = ((val24-(float8){})*val27);
        acc12 = (acc12+alu34);
      }
      *((float8_u*)(data0+(gidx0*256+gidx1*16))) = acc5;
      *((float8_u*)(data0+(gidx0*256+gidx1*16+64))) = acc6;
      *((float8_u*)(data0+(gidx0*256+gidx1*16+128))) = acc7;
      *((float8_u*)(data0+(gidx0*256+gidx1*16+192))) = acc8;
      *((float8_u*)(data0+(gidx0*256+gidx1*16+8))) = acc9;
      *((float8_u*)(data0+(gidx0*256+gidx1*16+72))) = acc10;
      *((float8_u*)(data0+(gidx0*256+gidx1*16+136))) = acc11;
      *((float8_u*)(data0+(gidx0*256+gidx1*16+200))) = acc12;
    }
  }
}
