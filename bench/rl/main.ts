console.log('bench placeholder');
