/* A stand-in libnvidia-ml for tests: two H200s, the second with faults; it lacks some calls on purpose. */
#include <string.h>
typedef void* H;
static int calls;
int nvmlInit_v2(void){return 0;}
int nvmlShutdown(void){return 0;}
const char* nvmlErrorString(int c){return c==3?"Not Supported":"Unknown Error";}
int nvmlDeviceGetCount_v2(unsigned*n){*n=2;return 0;}
int nvmlDeviceGetHandleByIndex_v2(unsigned i,H*h){*h=(H)(long)(i+1);return 0;}
int nvmlDeviceGetName(H h,char*b,unsigned n){strncpy(b,"NVIDIA H200",n);return 0;}
typedef struct{char legacy[16];unsigned domain,bus,device,pciDeviceId,sub;char busId[32];}Pci;
int nvmlDeviceGetPciInfo_v3(H h,Pci*p){memset(p,0,sizeof*p);p->bus=(unsigned)(long)h*16;strcpy(p->busId,(long)h==1?"00000000:18:00.0":"00000000:3B:00.0");return 0;}
int nvmlDeviceGetEccMode(H h,int*c,int*p){*c=1;*p=1;return 0;}
int nvmlDeviceGetTotalEccErrors(H h,int t,int c,unsigned long long*n){*n=(long)h==2&&t==1&&c==0?12:(t==0&&c==1);return 0;}
int nvmlDeviceGetRetiredPages(H h,int cause,unsigned*count,unsigned long long*a){return 3;}
int nvmlDeviceGetRemappedRows(H h,unsigned*a,unsigned*b,unsigned*p,unsigned*f){*a=1;*b=2;*p=(long)h==2;*f=0;return 0;}
int nvmlDeviceGetCurrPcieLinkGeneration(H h,unsigned*v){*v=(long)h==2?4:5;return 0;}
int nvmlDeviceGetMaxPcieLinkGeneration(H h,unsigned*v){*v=5;return 0;}
int nvmlDeviceGetGpuMaxPcieLinkGeneration(H h,unsigned*v){*v=5;return 0;}
int nvmlDeviceGetCurrPcieLinkWidth(H h,unsigned*v){*v=(long)h==2?8:16;return 0;}
int nvmlDeviceGetMaxPcieLinkWidth(H h,unsigned*v){*v=16;return 0;}
int nvmlDeviceGetPersistenceMode(H h,unsigned*v){*v=1;return 0;}
int nvmlDeviceGetPowerManagementLimit(H h,unsigned*v){*v=(long)h==2?500000:700000;return 0;}
int nvmlDeviceGetPowerManagementDefaultLimit(H h,unsigned*v){*v=700000;return 0;}
int nvmlDeviceGetPowerManagementLimitConstraints(H h,unsigned*a,unsigned*b){*a=200000;*b=700000;return 0;}
int nvmlDeviceGetEnforcedPowerLimit(H h,unsigned*v){*v=700000;return 0;}
int nvmlDeviceGetCurrentClocksThrottleReasons(H h,unsigned long long*v){*v=(long)h==2?0x21:1;return 0;}
typedef struct{unsigned gpu,memory;}U;
int nvmlDeviceGetUtilizationRates(H h,U*u){u->gpu=0;u->memory=0;return 0;}
int nvmlDeviceGetMigMode(H h,unsigned*c,unsigned*p){return 3;}
typedef struct{unsigned char uuid[16];int status;unsigned clique;unsigned state;}F;
int nvmlDeviceGetGpuFabricInfo(H h,F*f){f->state=3;f->status=0;return 0;}
int nvmlDeviceGetClockInfo(H h,int k,unsigned*v){*v=k==1?1980:3201;return 0;}
int nvmlDeviceGetMaxClockInfo(H h,int k,unsigned*v){*v=1980;return 0;}
int nvmlDeviceGetTemperature(H h,int s,unsigned*v){*v=40;return 0;}
int nvmlDeviceGetPowerUsage(H h,unsigned*v){*v=126000;return 0;}
typedef struct{unsigned long long total,free,used;}M;
int nvmlDeviceGetMemoryInfo(H h,M*m){m->total=150000000000ULL;m->free=1;m->used=2;return 0;}
int nvmlSystemGetDriverVersion(char*b,unsigned n){strncpy(b,"580.95.05",n);return 0;}
int nvmlSystemGetCudaDriverVersion_v2(int*v){*v=13000;return 0;}
int nvmlSystemGetCudaDriverVersion(int*v){*v=13000;return 0;}
int nvmlInit(void){return 0;}
int nvmlDeviceGetCount(unsigned*n){*n=2;return 0;}
int nvmlDeviceGetHandleByIndex(unsigned i,H*h){*h=(H)(long)(i+1);return 0;}
int nvmlDeviceGetUUID(H h,char*b,unsigned n){strncpy(b,(long)h==1?"GPU-fake-0":"GPU-fake-1",n);return 0;}
int nvmlDeviceGetMemoryInfo_v2(H h,void*m){return 3;}
