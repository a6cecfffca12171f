/* A stand-in libnvidia-ml for tests: two H200s joined by 6 NVLinks, the second with faults. It answers
   every call engine/hw/nvml.py makes, except nvmlDeviceGetCurrentClocksEventReasons, which it lacks on
   purpose (drivers before 535 have only the older ...ThrottleReasons). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
typedef void* H;
#define GPU(h) ((long)(h))
/* FAKE_NVML_SCENE picks another picture of the first GPU (the block at the end); unset: the one above */
static int scene(void);
static int scene_util(H h,unsigned*gpu);
static int scene_memory(H h,unsigned long long*used);
static int scene_processes(H h,int graphics,unsigned*n,void*p);
static int scene_samples(H h,void*s,unsigned*n,unsigned long long since);
int nvmlInit_v2(void){return 0;}
int nvmlShutdown(void){return 0;}
const char* nvmlErrorString(int c){return c==3?"Not Supported":c==6?"Not Found":"Unknown Error";}
int nvmlDeviceGetCount_v2(unsigned*n){*n=2;return 0;}
int nvmlDeviceGetHandleByIndex_v2(unsigned i,H*h){if(i>1)return 2;*h=(H)(long)(i+1);return 0;}
int nvmlDeviceGetName(H h,char*b,unsigned n){strncpy(b,"NVIDIA H200",n);return 0;}
typedef struct{char legacy[16];unsigned domain,bus,device,pciDeviceId,sub;char busId[32];}Pci;
static void pci(long gpu,Pci*p){memset(p,0,sizeof*p);p->bus=gpu==1?0x18:0x3B;strcpy(p->busId,gpu==1?"00000000:18:00.0":"00000000:3B:00.0");}
int nvmlDeviceGetPciInfo_v3(H h,Pci*p){pci(GPU(h),p);return 0;}
int nvmlDeviceGetHandleByPciBusId_v2(const char*a,H*h){size_t n=strlen(a);if(n<7)return 6;a+=n-7;
  if(!strcasecmp(a,"18:00.0")){*h=(H)1L;return 0;}if(!strcasecmp(a,"3b:00.0")){*h=(H)2L;return 0;}return 6;}
int nvmlDeviceGetEccMode(H h,int*c,int*p){*c=1;*p=1;return 0;}
int nvmlDeviceGetTotalEccErrors(H h,int t,int c,unsigned long long*n){*n=GPU(h)==2&&t==1&&c==0?12:(t==0&&c==1);return 0;}
/* the first GPU remaps rows instead (Not Supported); the second has two pages retired per cause */
int nvmlDeviceGetRetiredPages(H h,int cause,unsigned*count,unsigned long long*a){if(GPU(h)==1)return 3;if(*count<2){*count=2;return 7;}*count=2;return 0;}
int nvmlDeviceGetRetiredPagesPendingStatus(H h,int*v){*v=GPU(h)==2;return 0;}
int nvmlDeviceGetRemappedRows(H h,unsigned*a,unsigned*b,unsigned*p,unsigned*f){*a=1;*b=2;*p=GPU(h)==2;*f=0;return 0;}
int nvmlDeviceGetCurrPcieLinkGeneration(H h,unsigned*v){*v=GPU(h)==2?4:5;return 0;}
int nvmlDeviceGetMaxPcieLinkGeneration(H h,unsigned*v){*v=5;return 0;}
int nvmlDeviceGetGpuMaxPcieLinkGeneration(H h,unsigned*v){*v=5;return 0;}
int nvmlDeviceGetCurrPcieLinkWidth(H h,unsigned*v){*v=GPU(h)==2?8:16;return 0;}
int nvmlDeviceGetMaxPcieLinkWidth(H h,unsigned*v){*v=16;return 0;}
int nvmlDeviceGetPersistenceMode(H h,unsigned*v){*v=1;return 0;}
int nvmlDeviceGetPowerManagementLimit(H h,unsigned*v){*v=GPU(h)==2?500000:700000;return 0;}
int nvmlDeviceGetPowerManagementDefaultLimit(H h,unsigned*v){*v=700000;return 0;}
int nvmlDeviceGetPowerManagementLimitConstraints(H h,unsigned*a,unsigned*b){*a=200000;*b=700000;return 0;}
int nvmlDeviceGetEnforcedPowerLimit(H h,unsigned*v){*v=700000;return 0;}
int nvmlDeviceGetCurrentClocksThrottleReasons(H h,unsigned long long*v){*v=GPU(h)==2?0x21:1;return 0;}
typedef struct{unsigned gpu,memory;}U;
int nvmlDeviceGetUtilizationRates(H h,U*u){if(scene()&&GPU(h)==1){u->memory=0;return scene_util(h,&u->gpu);}u->gpu=GPU(h)==1?97:0;u->memory=0;return 0;}
int nvmlDeviceGetMigMode(H h,unsigned*c,unsigned*p){return 3;}
typedef struct{unsigned char uuid[16];int status;unsigned clique;unsigned state;}F;
int nvmlDeviceGetGpuFabricInfo(H h,F*f){f->state=3;f->status=0;return 0;}
int nvmlDeviceGetClockInfo(H h,int k,unsigned*v){*v=k==1?1980:3201;return 0;}
int nvmlDeviceGetMaxClockInfo(H h,int k,unsigned*v){*v=k==1?1980:3201;return 0;}
int nvmlDeviceGetMemoryBusWidth(H h,unsigned*v){*v=6144;return 0;}
int nvmlDeviceGetCudaComputeCapability(H h,int*a,int*b){*a=9;*b=0;return 0;}
int nvmlDeviceGetNumGpuCores(H h,unsigned*v){*v=16896;return 0;}
int nvmlDeviceGetTemperature(H h,int s,unsigned*v){*v=s==0?40:0;return 0;}
int nvmlDeviceGetPowerUsage(H h,unsigned*v){*v=126000;return 0;}
typedef struct{unsigned long long total,free,used;}M;
int nvmlDeviceGetMemoryInfo(H h,M*m){m->total=150000000000ULL;m->free=1;m->used=2;return 0;}
/* v2 leaves out the driver's reservation; only the first GPU's driver offers it, and only at its version */
typedef struct{unsigned version;unsigned long long total,reserved,free,used;}M2;
int nvmlDeviceGetMemoryInfo_v2(H h,M2*m){if(GPU(h)!=1)return 3;if(m->version!=0x02000028)return 2;if(scene()){m->total=150000000000ULL;m->reserved=645922816ULL;scene_memory(h,&m->used);m->free=m->total-m->used;return 0;}m->total=150000000000ULL;m->reserved=645922816ULL;m->free=9;m->used=5;return 0;}
/* the first GPU runs two processes (the second's memory unknown to the driver), the second none */
typedef struct{unsigned pid;unsigned long long used;unsigned gi,ci;}P;
int nvmlDeviceGetComputeRunningProcesses_v3(H h,unsigned*n,P*p){
  if(scene()&&GPU(h)==1)return scene_processes(h,0,n,p);
  if(GPU(h)==2){*n=0;return 0;}
  if(*n<2||!p){*n=2;return 7;}
  memset(p,0,2*sizeof*p);p[0].pid=4242;p[0].used=1073741824ULL;p[1].pid=4343;p[1].used=~0ULL;*n=2;return 0;}
typedef struct{unsigned pid;unsigned long long ts;unsigned sm,mem,enc,dec;}S;
int nvmlDeviceGetProcessUtilization(H h,S*s,unsigned*n,unsigned long long since){
  if(scene()&&GPU(h)==1)return scene_samples(h,s,n,since);
  if(GPU(h)==2)return 6;
  if(!s||*n<2){*n=2;return 7;}
  memset(s,0,2*sizeof*s);s[0].pid=4242;s[0].ts=since+5;s[0].sm=20;s[1].pid=4242;s[1].ts=since+10;s[1].sm=55;*n=2;return 0;}
int nvmlSystemGetDriverVersion(char*b,unsigned n){strncpy(b,"580.95.05",n);return 0;}
int nvmlSystemGetCudaDriverVersion_v2(int*v){*v=13000;return 0;}
int nvmlDeviceGetUUID(H h,char*b,unsigned n){strncpy(b,GPU(h)==1?"GPU-fake-0":"GPU-fake-1",n);return 0;}
/* topology: one NUMA node (40), links 0-5 active to the other GPU, 6-11 down, 12-17 not supported */
int nvmlDeviceGetTopologyCommonAncestor(H a,H b,int*level){*level=GPU(a)==GPU(b)?0:40;return 0;}
int nvmlDeviceGetNvLinkState(H h,unsigned link,int*active){if(link>=12)return 3;*active=link<6;return 0;}
int nvmlDeviceGetNvLinkRemotePciInfo_v2(H h,unsigned link,Pci*p){if(link>=6)return 3;pci(3-GPU(h),p);return 0;}
int nvmlDeviceGetNvLinkRemoteDeviceType(H h,unsigned link,int*kind){*kind=0;return 0;}
/* --- the passive gate (issue 33): the VBIOS version, one per GPU model here --- */
int nvmlDeviceGetVbiosVersion(H h,char*b,unsigned n){strncpy(b,"96.00.68.00.01",n);return 0;}

/* --- scenes of other users (helper "unseen", issue 31): FAKE_NVML_SCENE=quiet|unseen|holder ------------
   pid 4242 is rigcheck's own stage child (1 GiB, 55% SM) in every scene.
   quiet:  nothing else; 40 MiB of device memory no process accounts for (the driver's bookkeeping).
   unseen: a process in another PID namespace: 874 MiB no listed process accounts for, sampled at 100% SM
           under pid 9999, which no process list shows; the GPU 100% busy.
   holder: pid 5151 holds 120 GiB and does no work (no SM sample); Xorg (pid 6161, a graphics process) 64 MiB. */
static int scene(void){const char*s=getenv("FAKE_NVML_SCENE");return s&&*s?(s[0]=='u'?2:s[0]=='h'?3:1):0;}
#define MIB 1048576ULL
static int scene_util(H h,unsigned*gpu){*gpu=scene()==2?100:97;return 0;}
static int scene_memory(H h,unsigned long long*used){
  int k=scene();*used=1024*MIB+(k==1?40*MIB:k==2?874*MIB:120*1024*MIB+64*MIB);return 0;}
static int scene_processes(H h,int graphics,unsigned*n,void*out){
  P*p=(P*)out;unsigned want=graphics?(scene()==3):(scene()==3?2:1);
  if(!p||*n<want){*n=want;return want?7:0;}
  memset(p,0,want*sizeof*p);
  if(graphics){if(want){p[0].pid=6161;p[0].used=64*MIB;}*n=want;return 0;}
  p[0].pid=4242;p[0].used=1024*MIB;
  if(want>1){p[1].pid=5151;p[1].used=120*1024*MIB;}
  *n=want;return 0;}
static int scene_samples(H h,void*out,unsigned*n,unsigned long long since){
  S*s=(S*)out;unsigned want=scene()==2?2:1;
  if(!s||*n<want){*n=want;return 7;}
  memset(s,0,want*sizeof*s);s[0].pid=4242;s[0].ts=since+5;s[0].sm=55;
  if(want>1){s[1].pid=9999;s[1].ts=since+5;s[1].sm=100;}
  *n=want;return 0;}
int nvmlDeviceGetGraphicsRunningProcesses_v3(H h,unsigned*n,P*p){
  if(scene()&&GPU(h)==1)return scene_processes(h,1,n,p);
  *n=0;return 0;}
/* the driver's utilization samples: one every 100 ms after `since`, up to now; busy only in the unseen scene */
typedef struct{unsigned long long ts;unsigned long long value;}Smp;
static unsigned long long now_us(void){struct timeval t;gettimeofday(&t,0);return t.tv_sec*1000000ULL+t.tv_usec;}
int nvmlDeviceGetSamples(H h,int kind,unsigned long long since,int*type,unsigned*n,Smp*s){
  unsigned long long now=now_us();unsigned avail=0;
  *type=1;while(avail<64&&since+100000ULL*(avail+1)<=now)avail++;
  if(!s){*n=avail;return 0;}
  unsigned want=*n<avail?*n:avail;
  for(unsigned i=0;i<want;i++){s[i].ts=since+100000ULL*(i+1);s[i].value=scene()==2&&GPU(h)==1?100:0;}
  *n=want;return 0;}
