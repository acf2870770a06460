// Two processes over loopback TCP: an allreduce of N floats as reduce-scatter + allgather (mode 0) or
// one whole exchange and a fold (mode 1), poll-based; rank 0 prints the median. Lab tool, not shipped:
//   gcc -O2 -o exchange exchange.c && ./exchange [COUNT=1863690] [ITERS=200] [MODE=0]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <poll.h>
#include <fcntl.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e3+t.tv_nsec/1e6;}
static void xchg(int fd, char*out, char*in, size_t n){
  size_t so=0, ri=0;
  while(so<n||ri<n){
    struct pollfd p={fd,(so<n?POLLOUT:0)|(ri<n?POLLIN:0),0};
    poll(&p,1,-1);
    if(so<n){ssize_t k=send(fd,out+so,n-so,MSG_DONTWAIT); if(k>0)so+=k;}
    if(ri<n){ssize_t k=recv(fd,in+ri,n-ri,MSG_DONTWAIT); if(k>0)ri+=k;}
  }
}
int main(int argc,char**argv){
  size_t count=argc>1?atol(argv[1]):1863690; int iters=argc>2?atoi(argv[2]):200; int mode=argc>3?atoi(argv[3]):0;
  int ls=socket(AF_INET,SOCK_STREAM,0); struct sockaddr_in a={0}; a.sin_family=AF_INET; a.sin_addr.s_addr=htonl(0x7f000001); a.sin_port=0;
  bind(ls,(void*)&a,sizeof a); listen(ls,1); socklen_t al=sizeof a; getsockname(ls,(void*)&a,&al);
  pid_t pid=fork(); int rank=pid==0?1:0; int fd;
  if(rank==1){fd=socket(AF_INET,SOCK_STREAM,0); connect(fd,(void*)&a,sizeof a);} else fd=accept(ls,0,0);
  int one=1; setsockopt(fd,IPPROTO_TCP,TCP_NODELAY,&one,sizeof one);
  float*g=malloc(count*4), *tmp=malloc(count*4); for(size_t i=0;i<count;i++)g[i]=rank+i*1e-6f;
  size_t h=count/2; size_t mine_off=rank==0?0:h, mine_n=rank==0?h:count-h, other_off=rank==0?h:0, other_n=count-mine_n;
  double *ts=malloc(iters*sizeof(double));
  for(int it=0;it<iters+20;it++){
    double t0=now();
    if(mode==0){ // RS + AG
      // send other's half, receive my half from peer (sizes equal when count even)
      xchg(fd,(char*)(g+other_off),(char*)tmp,other_n*4);
      for(size_t i=0;i<mine_n;i++) g[mine_off+i]=(g[mine_off+i]+tmp[i])*0.5f;
      xchg(fd,(char*)(g+mine_off),(char*)(g+other_off),mine_n*4);
    } else { // whole exchange + fold
      xchg(fd,(char*)g,(char*)tmp,count*4);
      for(size_t i=0;i<count;i++) g[i]=(g[i]+tmp[i])*0.5f;
    }
    if(it>=20) ts[it-20]=now()-t0;
  }
  if(rank==0){ // median
    for(int i=0;i<iters;i++)for(int j=i+1;j<iters;j++)if(ts[j]<ts[i]){double x=ts[i];ts[i]=ts[j];ts[j]=x;}
    printf("count=%zu mode=%d median=%.3f ms min=%.3f p90=%.3f\n",count,mode,ts[iters/2],ts[0],ts[iters*9/10]);
  }
  if(pid) wait(0);
  return 0;
}
