/* A stand-in libnvidia-ml for the passive health gate: up to 8 healthy H200s whose faults a test writes,
   one "key=value" a line, to the file named by $FAKE_NVML_STATE (re-read on every call, so a test, or a
   Slurm daemon's health check, sees each change at once). Keys and their healthy defaults:
     gpus=2  ecc_corrected=12  ecc_uncorrected=0  remap_pending=0  remap_failure=0  remap_correctable=0
     gen=5  width=16  power_limit=700000  persistence=1  throttle=1  vbios=96.00.68.00.01  processes=0
     init_sleep=0 (seconds nvmlInit_v2 hangs, as a wedged driver does)  init_fail=0
     util=0 (% of time the GPU was busy)  pcie_fail=0 (1: every PCIe link read fails, as on a GPU going bad)
     pid=4242 (the first listed process's pid: give a live one for a process this namespace can see)
     unlisted=0 (MiB in use that no listed process accounts for: a process in another container)
   A key suffixed with the GPU's index (width1=8) applies to that GPU alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
typedef void* H;
#define GPU(h) ((long)(h) - 1)

static long state(const char* key, long fallback, long gpu) {
  const char* path = getenv("FAKE_NVML_STATE");
  FILE* f = path ? fopen(path, "r") : NULL;
  char line[256], own[64];
  long value = fallback, mine = 0; int have_mine = 0;
  if (!f) return fallback;
  snprintf(own, sizeof own, "%s%ld=", key, gpu);
  size_t n = strlen(key);
  while (fgets(line, sizeof line, f)) {
    if (gpu >= 0 && strncmp(line, own, strlen(own)) == 0) { mine = strtol(line + strlen(own), NULL, 0); have_mine = 1; }
    else if (strncmp(line, key, n) == 0 && line[n] == '=') value = strtol(line + n + 1, NULL, 0);
  }
  fclose(f);
  return have_mine ? mine : value;
}
static long S(const char* key, long fallback) { return state(key, fallback, -1); }
static long G(const char* key, long fallback, H h) { return state(key, fallback, GPU(h)); }

int nvmlInit_v2(void){ sleep((unsigned)S("init_sleep", 0)); return S("init_fail", 0) ? 999 : 0; }
int nvmlShutdown(void){return 0;}
const char* nvmlErrorString(int c){return c==3?"Not Supported":c==999?"Driver/library version mismatch":"Unknown Error";}
int nvmlSystemGetDriverVersion(char*b,unsigned n){strncpy(b,"580.95.05",n);return 0;}
int nvmlDeviceGetCount_v2(unsigned*n){*n=(unsigned)S("gpus",2);return 0;}
int nvmlDeviceGetHandleByIndex_v2(unsigned i,H*h){if(i>=(unsigned)S("gpus",2))return 2;*h=(H)(long)(i+1);return 0;}
int nvmlDeviceGetName(H h,char*b,unsigned n){strncpy(b,"NVIDIA H200",n);return 0;}
int nvmlDeviceGetUUID(H h,char*b,unsigned n){snprintf(b,n,"GPU-00000000-0000-0000-0000-00000000000%ld",GPU(h));return 0;}
int nvmlDeviceGetVbiosVersion(H h,char*b,unsigned n){snprintf(b,n,G("vbios",0,h)?"96.00.%02ld.00.01":"96.00.68.00.01",G("vbios",0,h));return 0;}
typedef struct{char legacy[16];unsigned domain,bus,device,pciDeviceId,sub;char busId[32];}Pci;
int nvmlDeviceGetPciInfo_v3(H h,Pci*p){memset(p,0,sizeof*p);p->bus=0x18+GPU(h);snprintf(p->busId,32,"00000000:%02lX:00.0",0x18+GPU(h));return 0;}
int nvmlDeviceGetEccMode(H h,int*c,int*p){*c=1;*p=1;return 0;}
int nvmlDeviceGetTotalEccErrors(H h,int t,int c,unsigned long long*n){*n=t==0?G("ecc_corrected",12,h):G("ecc_uncorrected",0,h);return 0;}
int nvmlDeviceGetRetiredPages(H h,int cause,unsigned*count,unsigned long long*a){return 3;}
int nvmlDeviceGetRetiredPagesPendingStatus(H h,int*v){return 3;}
int nvmlDeviceGetRemappedRows(H h,unsigned*a,unsigned*b,unsigned*p,unsigned*f){*a=G("remap_correctable",0,h);*b=0;*p=G("remap_pending",0,h);*f=G("remap_failure",0,h);return 0;}
#define PCIE_OK(h) if(G("pcie_fail",0,h))return 15
int nvmlDeviceGetCurrPcieLinkGeneration(H h,unsigned*v){PCIE_OK(h);*v=G("gen",5,h);return 0;}
int nvmlDeviceGetMaxPcieLinkGeneration(H h,unsigned*v){PCIE_OK(h);*v=5;return 0;}
int nvmlDeviceGetGpuMaxPcieLinkGeneration(H h,unsigned*v){PCIE_OK(h);*v=5;return 0;}
int nvmlDeviceGetCurrPcieLinkWidth(H h,unsigned*v){PCIE_OK(h);*v=G("width",16,h);return 0;}
int nvmlDeviceGetMaxPcieLinkWidth(H h,unsigned*v){PCIE_OK(h);*v=16;return 0;}
int nvmlDeviceGetPersistenceMode(H h,unsigned*v){*v=G("persistence",1,h);return 0;}
int nvmlDeviceGetPowerManagementLimit(H h,unsigned*v){*v=G("power_limit",700000,h);return 0;}
int nvmlDeviceGetPowerManagementDefaultLimit(H h,unsigned*v){*v=700000;return 0;}
int nvmlDeviceGetPowerManagementLimitConstraints(H h,unsigned*a,unsigned*b){*a=200000;*b=700000;return 0;}
int nvmlDeviceGetEnforcedPowerLimit(H h,unsigned*v){*v=G("power_limit",700000,h);return 0;}
int nvmlDeviceGetCurrentClocksEventReasons(H h,unsigned long long*v){*v=G("throttle",1,h);return 0;}
typedef struct{unsigned gpu,memory;}U;
int nvmlDeviceGetUtilizationRates(H h,U*u){u->gpu=(unsigned)G("util",0,h);u->memory=0;return 0;}
int nvmlDeviceGetMigMode(H h,unsigned*c,unsigned*p){return 3;}
typedef struct{unsigned char uuid[16];int status;unsigned clique;unsigned state;}F;
int nvmlDeviceGetGpuFabricInfo(H h,F*f){return 3;}
typedef struct{unsigned pid;unsigned long long used;unsigned gi,ci;}P;
int nvmlDeviceGetComputeRunningProcesses_v3(H h,unsigned*n,P*p){
  unsigned want=(unsigned)G("processes",0,h);
  if(!want){*n=0;return 0;}
  if(*n<want||!p){*n=want;return 7;}
  for(unsigned i=0;i<want;i++){memset(&p[i],0,sizeof p[i]);p[i].pid=(unsigned)G("pid",4242,h)+i;p[i].used=1073741824ULL;}
  *n=want;return 0;}
/* v2 leaves out the driver's reservation: 40 MiB of bookkeeping, the listed processes' 1 GiB each, and `unlisted` */
typedef struct{unsigned version;unsigned long long total,reserved,free,used;}M2;
int nvmlDeviceGetMemoryInfo_v2(H h,M2*m){
  if(m->version!=0x02000028)return 2;
  m->total=150000000000ULL;m->reserved=645922816ULL;
  m->used=(40ULL+1024ULL*(unsigned long long)G("processes",0,h)+(unsigned long long)G("unlisted",0,h))*1048576ULL;
  m->free=m->total-m->used;return 0;}
