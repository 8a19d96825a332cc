/* Build products embedded so execbox stays one binary: the static sandbox
 * init and the seccomp filters compiled by tools/gen_seccomp. */
        .section .rodata
        .balign 16
        .global xb_init_image
        .global xb_init_image_end
xb_init_image:
        .incbin XB_INIT_PATH
xb_init_image_end:

        .balign 16
        .global xb_seccomp_main_bpf
        .global xb_seccomp_main_bpf_end
xb_seccomp_main_bpf:
        .incbin XB_SECCOMP_MAIN
xb_seccomp_main_bpf_end:

        .balign 16
        .global xb_seccomp_stub_bpf
        .global xb_seccomp_stub_bpf_end
xb_seccomp_stub_bpf:
        .incbin XB_SECCOMP_STUB
xb_seccomp_stub_bpf_end:
        .section .note.GNU-stack,"",@progbits
